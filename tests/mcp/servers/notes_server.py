"""A small MCP server on the Python MCP SDK, for Larik's tests of the HTTP transports.

Usage: notes_server.py (streamable-http | sse) [--require-header NAME=VALUE | --oauth ISSUER [SCOPE]]

It listens on a free port on 127.0.0.1, prints `listening <port>` on stdout once it
accepts connections, and serves until killed. With `--oauth`, it is a protected resource
of the authorization server at ISSUER: it publishes its resource metadata (RFC 9728),
answers a request without a valid bearer token with 401 and a `WWW-Authenticate`
challenge, and checks each token by introspection at ISSUER/introspect; with SCOPE, a
token without that scope gets 403 (`insufficient_scope`). Tools: `add_note` (changes state),
`count_notes` (read-only, closed world), `hang` (never answers), `sign_guestbook` (asks the
user for a name through elicitation). A resource
`notes://all` and a prompt `review`.
"""

import asyncio
import json
import socket
import sys
import urllib.parse
import urllib.request

import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel
from mcp.types import ToolAnnotations
from starlette.responses import PlainTextResponse

notes: list[str] = []


def add_note(text: str) -> str:
    notes.append(text)
    return f"{len(notes)} notes"


def count_notes() -> str:
    return f"{len(notes)} notes: " + ", ".join(notes)


async def hang() -> str:
    await asyncio.Event().wait()
    return "never"


class Signature(BaseModel):
    name: str
    agree: bool = False


async def sign_guestbook(ctx: Context) -> str:
    answer = await ctx.elicit(message="Who signs the guestbook?", schema=Signature)
    if answer.action == "accept":
        notes.append(f"signed by {answer.data.name}")
        return f"signed by {answer.data.name} (agrees: {answer.data.agree})"
    return f"not signed: {answer.action}"


def all_notes() -> str:
    return "\n".join(notes) or "(no notes)"


def review(topic: str, style: str = "brief") -> str:
    return f"Review {topic} in a {style} style."


class IntrospectingVerifier:
    """Asks the authorization server whether a bearer token is valid."""

    def __init__(self, issuer: str) -> None:
        self.introspection = f"{issuer}/introspect"

    def introspect(self, token: str) -> dict:
        body = urllib.parse.urlencode({"token": token}).encode()
        with urllib.request.urlopen(self.introspection, data=body, timeout=30) as answer:
            return json.load(answer)

    async def verify_token(self, token: str) -> AccessToken | None:
        answer = await asyncio.to_thread(self.introspect, token)
        if not answer.get("active"):
            return None
        scope = answer.get("scope") or ""
        return AccessToken(
            token=token,
            client_id=answer.get("client_id", ""),
            scopes=scope.split(),
            resource=answer.get("aud"),
        )


def build(issuer: str | None, resource_url: str | None, scope: str | None = None) -> MCPServer:
    """The server; protected by `issuer` when one is given."""
    if issuer is None:
        server = MCPServer("notes")
    else:
        server = MCPServer(
            "notes",
            token_verifier=IntrospectingVerifier(issuer),
            auth=AuthSettings(
                issuer_url=issuer,
                resource_server_url=resource_url,
                validate_token_resource=False,
                required_scopes=[scope] if scope else None,
            ),
        )
    server.tool(description="Adds a note and returns how many there are.")(add_note)
    server.tool(
        description="Counts the notes.",
        annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False),
    )(count_notes)
    server.tool(description="Never answers.")(hang)
    server.tool(description="Asks the user who signs, then notes it.")(sign_guestbook)
    server.resource("notes://all", description="Every note, one per line.")(all_notes)
    server.prompt(description="Asks for a review of a topic in a style.")(review)
    return server


def main() -> None:
    transport = sys.argv[1]
    required = None
    issuer = None
    if len(sys.argv) > 3 and sys.argv[2] == "--require-header":
        name, value = sys.argv[3].split("=", 1)
        required = (name.lower(), value)
    scope = None
    if len(sys.argv) > 3 and sys.argv[2] == "--oauth":
        issuer = sys.argv[3]
        scope = sys.argv[4] if len(sys.argv) > 4 else None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    path = "/sse" if transport == "sse" else "/mcp"
    server = build(issuer, f"http://127.0.0.1:{port}{path}", scope)
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

    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)

    # The socket listens already: connections made from now on wait in its backlog until
    # the server accepts them.
    print(f"listening {port}", flush=True)
    asyncio.run(uv.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
