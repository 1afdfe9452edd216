// Drives agentd's MCP server with the official MCP TypeScript SDK client:
// node mcp.mjs <url> <api key> <agent id>. It initializes, lists the tools,
// calls list_agents and send_message, and prints what it got as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, agentId] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "agentd-interop", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const agents = await client.callTool({ name: "list_agents", arguments: {} });
const reply = await client.callTool({ name: "send_message", arguments: { agentId, text: "Hello from MCP", userId: "ide-user" } });
const missing = await client.callTool({ name: "send_message", arguments: { agentId: "agent_missing", text: "Hello" } });
console.log(JSON.stringify({
  server: client.getServerVersion(),
  tools: tools.tools.map((t) => t.name),
  agents: agents.structuredContent,
  reply: { text: reply.content[0]?.text, structured: reply.structuredContent, isError: reply.isError ?? false },
  missing: { text: missing.content[0]?.text, isError: missing.isError ?? false },
}));
await client.close();
