"""`arena serve`: a local OpenAI-compatible endpoint playing a suite's scripted policy, for trying the model path
(real HTTP requests, transcripts, the LLM judge, compare, fork) with no model server (docs/serve.md)."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Optional

import typer

from arena.core.dataset import DatasetError
from arena.core.prompt_book import PromptFileError
from arena.endpoints.chat_server import ServerStartError
from arena.runs.policy_server import PolicyServer

from .common import console, fail

app = typer.Typer()
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@app.command("serve", rich_help_panel="Run")
def serve(data: Path = typer.Option(..., help="The tasks it recognises: a world dir, task file or datasets.json."),
          policy: str = typer.Option("oracle", help="The scripted policy it plays (a suite's: oracle, direct, "
                                                    "text-only, ...)."),
          host: str = typer.Option("127.0.0.1", help="Address to listen on (loopback by default)."),
          port: int = typer.Option(8000, help="Port to listen on (0: any free one)."),
          latency: float = typer.Option(0.0, help="Seconds to wait before each reply, as a slow model would."),
          prompts: Optional[Path] = typer.Option(None, help="The run's --prompts file, to read its judge prompts.")
          ) -> None:
    """Serve a scripted policy as an OpenAI-compatible model (agent, judge and summariser) until Ctrl-C."""
    try:
        server = PolicyServer(data, policy, host=host, port=port, latency=latency, prompts=prompts)
    except ServerStartError as exc:
        fail(f"arena serve: {exc.strerror}")
    except (DatasetError, PromptFileError, ValueError) as exc:
        fail(str(exc))
    console.print(f"arena serve: policy {policy} over {data} ({server.tasks.count} task(s)) at {server.base_url}",
                  soft_wrap=True, highlight=False)
    console.print(f"  agent model: {server.model} (any --model name is answered by it); judge and web summariser "
                  "requests are answered by rule; Ctrl-C stops", soft_wrap=True, highlight=False)
    if host not in LOOPBACK:
        console.print(f"  note: listening on {host}, not loopback: whoever reaches this machine can use it (no API key "
                      "is checked)", soft_wrap=True, highlight=False)
    sys.stdout.flush()  # the address, for whoever reads a piped stdout before the first request
    signal.signal(signal.SIGTERM, _stop_on_term)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    answered = ", ".join(f"{what}: {n}" for what, n in sorted(server.answered.items())) or "none"
    console.print(f"arena serve: stopped; requests answered by kind: {answered}", highlight=False)


def _stop_on_term(signum: int, frame: object) -> None:
    """SIGTERM (`kill`, a service manager) stops the server as Ctrl-C does."""
    raise KeyboardInterrupt
