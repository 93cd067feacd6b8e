"""A small MCP server on the Python MCP SDK, for Larik's tests of the HTTP transports.

Usage: notes_server.py (streamable-http | sse) [--require-header NAME=VALUE]

It listens on a free port on 127.0.0.1, prints `listening <port>` on stdout once it
accepts connections, and serves until killed. Tools: `add_note` (changes state),
`count_notes` (read-only, closed world), `hang` (never answers). A resource
`notes://all` and a prompt `review`.
"""

import asyncio
import socket
import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations
from starlette.responses import PlainTextResponse

notes: list[str] = []
server = MCPServer("notes")


@server.tool(description="Adds a note and returns how many there are.")
def add_note(text: str) -> str:
    notes.append(text)
    return f"{len(notes)} notes"


@server.tool(
    description="Counts the notes.",
    annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
)
def count_notes() -> str:
    return f"{len(notes)} notes: " + ", ".join(notes)


@server.tool(description="Never answers.")
async def hang() -> str:
    await asyncio.Event().wait()
    return "never"


@server.resource("notes://all", description="Every note, one per line.")
def all_notes() -> str:
    return "\n".join(notes) or "(no notes)"


@server.prompt(description="Asks for a review of a topic in a style.")
def review(topic: str, style: str = "brief") -> str:
    return f"Review {topic} in a {style} style."


def main() -> None:
    transport = sys.argv[1]
    required = None
    if len(sys.argv) > 3 and sys.argv[2] == "--require-header":
        name, value = sys.argv[3].split("=", 1)
        required = (name.lower(), value)
    app = server.sse_app() if transport == "sse" else server.streamable_http_app()
    if required is not None:
        inner = app

        async def app(scope, receive, send):  # noqa: F811
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
                if headers.get(required[0]) != required[1]:
                    await PlainTextResponse("missing header", status_code=401)(scope, receive, send)
                    return
            await inner(scope, receive, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)

    # The socket listens already: connections made from now on wait in its backlog until
    # the server accepts them.
    print(f"listening {port}", flush=True)
    asyncio.run(uv.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
