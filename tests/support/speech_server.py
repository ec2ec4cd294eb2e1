"""`SpeechServer`: a real HTTP server on 127.0.0.1 speaking OpenAI's speech protocol
(`POST /v1/audio/speech` with JSON `{model, voice, input, response_format}`), for the openai
SDK in tests.

It answers with a WAV of a 440 Hz tone, 100 ms per word of `input`, written the way OpenAI
streams WAVs (RIFF and data chunk sizes `0xFFFFFFFF`), or with `status` and an OpenAI-style
error body. Requests are recorded (`requests`: parsed JSON bodies; `authorization`).

`FakeSpeech` is a speech provider without a server: a tone per text, the text in the WAV."""

from __future__ import annotations

import json
import math
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sparring.models.speech import Audio, write_wav

RATE = 24000


def tone_pcm(seconds: float, *, rate: int = RATE, amplitude: int = 8000) -> bytes:
    """Mono 16-bit PCM of a 440 Hz tone."""
    count = int(seconds * rate)
    return struct.pack(
        f"<{count}h",
        *(int(amplitude * math.sin(2 * math.pi * 440 * i / rate)) for i in range(count)),
    )


def streamed_wav(pcm: bytes, *, rate: int = RATE) -> bytes:
    """A WAV header with unknown sizes (as a streaming API sends it), then `pcm`."""
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    return (
        b"RIFF\xff\xff\xff\xffWAVEfmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data\xff\xff\xff\xff"
        + pcm
    )


class FakeSpeech:
    """A speech provider speaking a tone, 100 ms per word, with the text in the WAV."""

    def __init__(self, key: str = "fake:tone") -> None:
        self.key = key
        self.said: list[str] = []

    async def synthesize(self, text: str, /) -> bytes:
        self.said.append(text)
        words = max(1, len(text.split()))
        return write_wav(Audio(tone_pcm(0.1 * words), 24000, 1, 2), text=text)


class SpeechServer:
    def __init__(self, *, status: int = 200) -> None:
        self.status = status
        self.requests: list[dict[str, Any]] = []
        self.authorization: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.authorization.append(self.headers.get("Authorization", ""))
                if self.path != "/v1/audio/speech" or server.status != 200:
                    self._send(
                        server.status if server.status != 200 else 404,
                        json.dumps({"error": {"message": "no such voice", "type": "invalid"}}),
                        "application/json",
                        {"x-should-retry": "false"},
                    )
                    return
                words = max(1, len(str(body.get("input", "")).split()))
                self._send(200, streamed_wav(tone_pcm(0.1 * words)), "audio/wav", {})

            def _send(
                self, status: int, body: bytes | str, kind: str, headers: dict[str, str]
            ) -> None:
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> SpeechServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
