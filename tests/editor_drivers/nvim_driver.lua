-- Drives Neovim 0.7's built-in LSP client for tests/editors.py: commands arrive as JSON
-- lines on the Unix socket $CW_DRIVER_SOCKET, each answered by one JSON line. Every wait is
-- a bounded `vim.wait` on a condition; the LSP server is $CW_LSP_CMD (a JSON array).
local uv = vim.loop
local root = os.getenv("CW_ROOT")
local timeout = tonumber(os.getenv("CW_TIMEOUT_MS") or "60000")
local inbox, buffered, channel = {}, "", uv.new_pipe(false)
local exited = nil

vim.cmd("filetype on")
vim.o.swapfile = false
vim.o.hidden = true

local client_id = vim.lsp.start_client({
  name = "codeward-test",
  cmd = vim.json.decode(os.getenv("CW_LSP_CMD")),
  root_dir = root,
  workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fn.fnamemodify(root, ":t") } },
  flags = { debounce_text_changes = 0 },
  on_exit = function(code, signal) exited = { code = code, signal = signal } end,
})

local function client()
  return vim.lsp.get_client_by_id(client_id)
end

local function waited(what, predicate)
  if not vim.wait(timeout, predicate, 5) then
    error("timed out waiting for " .. what)
  end
end

local function buffer(path)
  local bufnr = vim.fn.bufnr(path)
  if bufnr == -1 then error("no buffer for " .. path) end
  return bufnr
end

local function text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, true), "\n") .. "\n"
end

local function position(args)
  return {
    textDocument = { uri = vim.uri_from_bufnr(buffer(args.path)) },
    position = { line = args.line, character = args.character },
  }
end

-- the one answer of our client to a request on the buffer of args.path
local function ask(method, args, params)
  local answers, err = vim.lsp.buf_request_sync(buffer(args.path), method, params, timeout)
  if not answers then error(method .. ": " .. tostring(err)) end
  local answer = answers[client_id]
  if not answer then error(method .. ": no answer") end
  if answer.error then error(method .. ": " .. vim.json.encode(answer.error)) end
  return answer.result
end

local function where(location)
  local uri = location.targetUri or location.uri
  local range = location.targetSelectionRange or location.range
  return { path = vim.uri_to_fname(uri), line = range.start.line, character = range.start.character }
end

local function diagnostics(bufnr)
  local found = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(found, { line = d.lnum, character = d.col, message = d.message, severity = d.severity })
  end
  return found
end

local function contains(haystack, needle)
  return needle == nil or haystack:find(needle, 1, true) ~= nil
end

local ops = {}

function ops.open(args)
  vim.cmd("edit " .. vim.fn.fnameescape(args.path))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(bufnr, client_id)
  waited("initialize", function() return exited or (client() and client().initialized) end)
  if exited then error("the server exited before initialize: " .. vim.json.encode(exited)) end
  return { filetype = vim.bo[bufnr].filetype, encoding = client().offset_encoding }
end

function ops.info()
  local c = client()
  return { name = c.name, pid = c.rpc.pid, server_info = c.server_info or vim.NIL }
end

function ops.hover(args)
  local result = ask("textDocument/hover", args, position(args))
  if not result then return vim.NIL end
  return table.concat(vim.lsp.util.convert_input_to_markdown_lines(result.contents), "\n")
end

function ops.definition(args)
  local result = ask("textDocument/definition", args, position(args)) or {}
  if result.uri or result.targetUri then result = { result } end
  local found = {}
  for _, location in ipairs(result) do table.insert(found, where(location)) end
  return found
end

function ops.completion(args)
  local result = ask("textDocument/completion", args, position(args)) or {}
  local labels = {}
  for _, item in ipairs(result.items or result) do table.insert(labels, item.label) end
  return labels
end

function ops.rename(args)
  local params = position(args)
  params.newName = args.new_name
  local edit = ask("textDocument/rename", args, params)
  if not edit then error("rename: no edit") end
  vim.lsp.util.apply_workspace_edit(edit, client().offset_encoding)
  local changed = {}
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.bo[bufnr].modified then changed[vim.api.nvim_buf_get_name(bufnr)] = text(bufnr) end
  end
  return changed
end

function ops.format(args)
  local bufnr = buffer(args.path)
  vim.api.nvim_set_current_buf(bufnr)
  if vim.lsp.buf.format then  -- 0.8+ (formatting_sync is gone from 0.10)
    vim.lsp.buf.format({ bufnr = bufnr, timeout_ms = timeout })
  else
    vim.lsp.buf.formatting_sync(nil, timeout)
  end
  return text(bufnr)
end

-- an unsaved change: lines [first, last) replaced; then a round trip on the same
-- connection (the server has the change once it answers a later request, be it with an
-- error: the client sends it whatever the server offers)
function ops.edit(args)
  local bufnr = buffer(args.path)
  vim.api.nvim_buf_set_lines(bufnr, args.first, args.last, true, args.lines)
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  local answer, err = client().request_sync("textDocument/documentSymbol", params, timeout, bufnr)
  if not answer then error("no answer after the change: " .. tostring(err)) end
  return text(bufnr)
end

-- a command the person runs (workspace/executeCommand) on the buffer's document; the
-- server's workspace/applyEdit that follows goes through the client's own handler
function ops.execute(args)
  local bufnr = buffer(args.path)
  local document = { uri = vim.uri_from_bufnr(bufnr), version = vim.lsp.util.buf_versions[bufnr] }
  return ask("workspace/executeCommand", args, { command = args.command, arguments = { document } })
end

function ops.text(args)
  local bufnr = buffer(args.path)
  return { text = text(bufnr), modified = vim.bo[bufnr].modified }
end

function ops.wait_text(args)
  local bufnr = buffer(args.path)
  waited("text " .. args.contains, function() return contains(text(bufnr), args.contains) end)
  return { text = text(bufnr), modified = vim.bo[bufnr].modified }
end

function ops.wait_diagnostics(args)
  local bufnr = buffer(args.path)
  local function matching()
    for _, d in ipairs(diagnostics(bufnr)) do
      if contains(d.message, args.contains) then return true end
    end
    return args.contains == nil and #diagnostics(bufnr) == (args.count or -1)
  end
  waited("diagnostics " .. tostring(args.contains or args.count), matching)
  return diagnostics(bufnr)
end

function ops.save(args)
  vim.api.nvim_buf_call(buffer(args.path), function() vim.cmd("write") end)
  return {}
end

function ops.close(args)
  vim.cmd("bwipeout! " .. buffer(args.path))
  return {}
end

function ops.stop()
  vim.lsp.stop_client(client_id)
  waited("the server's exit", function() return exited ~= nil end)
  return exited
end

local function reply(message, written)
  channel:write(vim.json.encode(message) .. "\n", written)
end

local connected = nil
channel:connect(os.getenv("CW_DRIVER_SOCKET"), function(err)
  connected = err or true
  channel:read_start(function(_, data)
    if not data then table.insert(inbox, false) return end  -- the harness went away
    buffered = buffered .. data
    while true do
      local newline = buffered:find("\n", 1, true)
      if not newline then break end
      table.insert(inbox, buffered:sub(1, newline - 1))
      buffered = buffered:sub(newline + 1)
    end
  end)
end)
waited("the driver socket", function() return connected ~= nil end)
if connected ~= true then error("driver socket: " .. connected) end
reply({ ready = true, pid = vim.fn.getpid(), version = vim.version() })

while true do
  -- the harness sends its next command when it wants; a command never runs in a callback
  vim.wait(24 * 3600 * 1000, function() return #inbox > 0 end, 5)
  local line = table.remove(inbox, 1)
  if not line then break end
  local command = vim.json.decode(line)
  if command.op == "quit" then
    if not exited then ops.stop() end
    local flushed = false
    reply({ id = command.id, result = exited }, function() flushed = true end)
    waited("the last reply", function() return flushed end)
    break
  end
  local op = ops[command.op]
  local ok, result = pcall(function()
    if not op then error("unknown op " .. command.op) end
    return op(command.args or {})
  end)
  if ok then
    reply({ id = command.id, result = result == nil and vim.NIL or result })
  else
    reply({ id = command.id, error = tostring(result) })
  end
end
vim.cmd("qall!")
