"""`sparring demo-agent`: serve the bundled demo agent, optionally around a command."""

from __future__ import annotations

import subprocess

import click


def demo_agent_command(*, host: str, port: int, command: tuple[str, ...]) -> int:
    """Serve the demo agent on `host:port`.

    Without `command`, serve until Ctrl-C and return 0. With it, start the server in the
    background, run `command`, stop the server and return the command's exit code.
    """
    from sparring.demo.server import DemoServer

    args = [a for a in command if a != "--"]
    try:
        server = DemoServer(host=host, port=port)
        server.start()
    except OSError as e:
        click.secho(f"error: cannot listen on {host}:{port} ({e.strerror}); pick another "
                    "port with --port, or stop what is using it", fg="red", err=True)
        return 2
    click.echo(f"Demo agent listening on {server.url} (POST /chat, /chat/stream, "
               "/v1/chat/completions)", err=True)
    try:
        if not args:
            click.echo("Press Ctrl-C to stop.", err=True)
            server.wait()
            return 0
        return subprocess.call(args)
    except FileNotFoundError:
        click.secho(f"error: command {args[0]!r} not found; give its full path (e.g. "
                    f".venv/bin/{args[0]}) or activate the virtual environment", fg="red",
                    err=True)
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        server.stop()

