"""A generated MCP server over stdio for Larik's many-server tests: plain JSON-RPC, no SDK
(so fifty of them start fast).

Usage: generated_server.py INDEX

Server INDEX serves three tools about one topic (TOPICS[INDEX % len(TOPICS)]):
`<topic>_lookup` and `<topic>_list` (read-only, closed world) and `<topic>_update`.
A call answers with the tool's name, the server's index and the arguments it got.
"""

import json
import sys

TOPICS = [
    "weather", "invoice", "calendar", "ticket", "deploy", "metric", "customer", "shipment",
    "payroll", "inventory", "contract", "incident", "recipe", "flight", "hotel", "library",
    "patient", "vehicle", "warehouse", "campaign", "survey", "budget", "lease", "grant",
    "course", "exam", "podcast", "playlist", "repository", "container", "certificate",
    "domain", "firewall", "backup", "license", "printer", "meeting", "vote", "auction",
    "donation", "volunteer", "harvest", "fleet", "parcel", "tariff", "vaccine", "museum",
    "stadium", "orchestra", "glacier",
]
INDEX = int(sys.argv[1])
TOPIC = TOPICS[INDEX % len(TOPICS)]
READ = {"readOnlyHint": True, "openWorldHint": False}
TOOLS = [
    {
        "name": f"{TOPIC}_lookup",
        "description": f"Looks up one {TOPIC} record by its id.",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        "annotations": READ,
    },
    {
        "name": f"{TOPIC}_list",
        "description": f"Lists {TOPIC} records, newest first.",
        "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer"}}},
        "annotations": READ,
    },
    {
        "name": f"{TOPIC}_update",
        "description": f"Changes fields of one {TOPIC} record.",
        "inputSchema": {
            "type": "object",
            "properties": {"id": {"type": "string"}, "fields": {"type": "object"}},
            "required": ["id", "fields"],
        },
    },
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    method = request.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": f"generated-{INDEX}", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        params = request["params"]
        text = f"{params['name']} on server {INDEX}: {json.dumps(params.get('arguments', {}), sort_keys=True)}"
        result = {"content": [{"type": "text", "text": text}]}
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": method}})
        continue
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})
