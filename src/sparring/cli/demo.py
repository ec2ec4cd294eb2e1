"""`sparring demo-agent`: serve the bundled demo agent, optionally around a command."""

from __future__ import annotations

import signal
import subprocess

import click


def demo_agent_command(
    *, host: str, port: int, command: tuple[str, ...], vulnerable: bool = False
) -> int:
    """Serve the demo agent on `host:port` (the weak red-team mode with `vulnerable`).

    Without `command`, serve until Ctrl-C and return 0. With it, start the server in the
    background, run `command`, stop the server and return the command's exit code.
    """
    from sparring.demo.server import DemoServer, banner, listen_error

    args = list(command[1:] if command[:1] == ("--",) else command)
    try:
        server = DemoServer(host=host, port=port, vulnerable=vulnerable)
        server.start()
    except OSError as e:
        click.secho(listen_error(host, port, e), fg="red", err=True)
        return 2
    click.echo(banner(server), err=True)
    try:
        if not args:
            click.echo("Press Ctrl-C to stop.", err=True)
            server.wait()
            return 0
        return _run_forwarding_signals(args)
    except FileNotFoundError:
        click.secho(
            f"error: command {args[0]!r} not found; give its full path (e.g. "
            f".venv/bin/{args[0]}) or activate the virtual environment",
            fg="red",
            err=True,
        )
        return 2
    except KeyboardInterrupt:
        return 130
    finally:
        server.stop()


def _run_forwarding_signals(args: list[str]) -> int:
    """Run `args`, passing SIGINT and SIGTERM on to it (a CI job cancelled while the demo
    agent wraps `sparring run` must stop the run too, not orphan it); its exit code."""
    child = subprocess.Popen(args)

    def forward(signum: int, frame: object) -> None:
        child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 128 - code if code < 0 else code  # killed by signal N: the shell's 128 + N
