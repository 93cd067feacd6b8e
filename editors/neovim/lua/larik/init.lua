-- Larik in Neovim: starts `larik lsp` as a language-server client, sends prompts from the
-- current buffer and selection, shows the agent's events in the chat buffer, and asks the
-- user about permissions and (optionally) edits. No agent logic lives here; the server does
-- all of it (docs/lsp.md is the contract).

local chat = require('larik.chat')
local ui = require('larik.ui')

local M = {}

local defaults = {
  -- The server's command line; put flags such as `--permission-mode` after `lsp`.
  cmd = { 'larik', 'lsp' },
  -- Extra environment for the server, on top of Neovim's own.
  cmd_env = nil,
  -- The workspace; default the current directory when the server starts.
  root_dir = nil,
  -- Ask Apply/Reject before Neovim applies an edit of the agent.
  confirm_edits = false,
  -- Open the chat buffer in a split when a prompt is sent.
  open_chat = true,
}

M.config = vim.deepcopy(defaults)

-- The one client and session of this Neovim.
local state = {
  client_id = nil,
  initialized = false,
  pending = {},
  session_id = nil,
  -- Callbacks waiting for the `larik/newSession` in flight, or nil when none is.
  session_waiters = nil,
  running = 0,
  prompts_done = 0,
  last_stop_reason = nil,
  last_error = nil,
  -- The current session's slash commands (`larik/commands`), once asked.
  commands = nil,
  -- The prompt the last `/rewind N` gave back, to edit and send again.
  rewound_prompt = nil,
  -- The ids the current conversation had before it moved (`/fork`, `/rewind`, `/resume`):
  -- its events may still carry them.
  earlier_ids = {},
}

--- Sets options (see `defaults` above); may be called again to change them.
function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
end

--- What the plugin knows: `{client_id, session_id, running, prompts_done,
--- last_stop_reason, last_error, rewound_prompt}`.
function M.status()
  return {
    client_id = state.client_id,
    session_id = state.session_id,
    running = state.running,
    prompts_done = state.prompts_done,
    last_stop_reason = state.last_stop_reason,
    last_error = state.last_error,
    rewound_prompt = state.rewound_prompt,
  }
end

-- `client:request` became a method in Neovim 0.11; older ones take the client implicitly.
local function request(client, method, params, handler, bufnr)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function notify_error(message)
  vim.notify('larik: ' .. message, vim.log.levels.ERROR)
end

-- Remembers the session a prompt or event names, so cancel and later prompts find it.
local function note_session(session_id)
  if type(session_id) == 'string' and session_id ~= '' then
    if session_id ~= state.session_id then
      -- Another session may offer other commands.
      state.commands = nil
      if state.session_id then
        state.earlier_ids[state.session_id] = true
      end
    end
    state.session_id = session_id
  end
end

-- The conversation continues in another session (`/fork`, `/rewind`, `/resume`) or a fresh
-- context (`/clear`): later prompts go to the new id, and a rewound prompt is offered for
-- editing in the prompt input.
local function switched(event)
  note_session(event.session_id)
  if event.reason == 'rewind' and type(event.prompt) == 'string' then
    state.rewound_prompt = event.prompt
    vim.schedule(function()
      vim.ui.input({ prompt = 'Larik: ', default = event.prompt }, function(text)
        if text and vim.trim(text) ~= '' then
          M.prompt(text)
        end
      end)
    end)
  end
end

local handlers = {}

handlers['larik/event'] = function(_, params)
  if type(params) ~= 'table' or type(params.event) ~= 'table' then
    return
  end
  if state.session_id == nil then
    note_session(params.sessionId)
  elseif params.sessionId ~= state.session_id and not state.earlier_ids[params.sessionId] then
    -- Another session of this server (e.g. one `:LarikNew` replaced) is not shown. The
    -- conversation's own earlier ids are: a prompt's answer, which names the id it moved
    -- to, may arrive before the events sent under the id it had.
    return
  end
  if params.event.type == 'session_switched' then
    switched(params.event)
  end
  chat.event(params.event)
end

handlers['larik/requestPermission'] = function(_, params)
  local call = params.toolCall or {}
  local options = params.options or {}
  local choice = ui.select(options, {
    prompt = 'Larik: ' .. (call.title or call.tool or 'allow this?'),
    kind = 'larik_permission',
    format_item = function(option)
      return option.name or option.optionId
    end,
  })
  if choice == nil then
    return { cancelled = true }
  end
  return { optionId = choice.optionId }
end

-- Neovim's own handler applies every edit; this one asks first when `confirm_edits` is on.
handlers['workspace/applyEdit'] = function(err, params, ctx, config)
  local apply = vim.lsp.handlers['workspace/applyEdit']
  if not M.config.confirm_edits then
    return apply(err, params, ctx, config)
  end
  local label = params and params.label or "Larik's edit"
  local choice = ui.select({ 'Apply', 'Reject' }, {
    prompt = 'Apply ' .. label .. '?',
    kind = 'larik_edit',
  })
  if choice ~= 'Apply' then
    return { applied = false, failureReason = 'rejected by the user' }
  end
  return apply(err, params, ctx, config)
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental = vim.tbl_deep_extend('force', caps.experimental or {}, {
    larik = { permissions = true },
  })
  return caps
end

local function on_init(client)
  state.initialized = true
  -- Later, not now: Neovim opens the attached buffers (didOpen) right after this callback,
  -- and a prompt about a buffer must reach the server after its text.
  vim.schedule(function()
    local pending = state.pending
    state.pending = {}
    for _, fn in ipairs(pending) do
      fn(client)
    end
  end)
end

local function on_exit(code)
  state.client_id = nil
  state.initialized = false
  state.pending = {}
  state.session_id = nil
  state.earlier_ids = {}
  state.session_waiters = nil
  if state.running > 0 then
    state.running = 0
    chat.add('! larik lsp exited (code ' .. tostring(code) .. ')')
  end
end

-- Starts `larik lsp` unless it runs; returns the client id or nil.
local function ensure_client()
  if state.client_id and vim.lsp.get_client_by_id(state.client_id) then
    return state.client_id
  end
  local cmd = M.config.cmd
  if vim.fn.executable(cmd[1]) ~= 1 then
    notify_error(cmd[1] .. ' is not executable (see :checkhealth larik)')
    return nil
  end
  local root = M.config.root_dir or vim.fn.getcwd()
  local config = {
    name = 'larik',
    cmd = cmd,
    cmd_env = M.config.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    capabilities = capabilities(),
    handlers = handlers,
    on_init = on_init,
    on_exit = vim.schedule_wrap(on_exit),
  }
  local id
  if vim.fn.has('nvim-0.11') == 1 then
    id = vim.lsp.start(config, { attach = false })
  else
    id = vim.lsp.start_client(config)
  end
  if not id then
    notify_error('could not start ' .. table.concat(cmd, ' '))
    return nil
  end
  state.client_id = id
  state.initialized = false
  return id
end

-- Runs `fn(client)` once the server has answered `initialize`.
local function with_client(fn)
  local id = ensure_client()
  if not id then
    return
  end
  if state.initialized then
    fn(vim.lsp.get_client_by_id(id))
  else
    table.insert(state.pending, fn)
  end
end

-- Runs `fn(session_id)` once there is a session, making one first when there is none, so
-- that prompts sent in a row all go to the same session. On failure `fn(nil)` runs.
local function with_session(client, fn)
  if state.session_id then
    fn(state.session_id)
    return
  end
  if state.session_waiters then
    table.insert(state.session_waiters, fn)
    return
  end
  state.session_waiters = { fn }
  request(client, 'larik/newSession', vim.empty_dict(), function(err, result)
    local waiters = state.session_waiters or {}
    state.session_waiters = nil
    if err then
      notify_error(err.message or 'new session failed')
    else
      note_session(result and result.sessionId)
    end
    for _, waiter in ipairs(waiters) do
      waiter(state.session_id)
    end
  end)
end

-- A buffer the server can see: a loaded file, not a special buffer.
local function is_document(bufnr)
  return vim.api.nvim_buf_get_option(bufnr, 'buftype') == '' and vim.api.nvim_buf_get_name(bufnr) ~= ''
end

-- UTF-16 code units of a UTF-8 string (LSP's default position encoding).
local function utf16_len(text)
  local units = 0
  for char in text:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    units = units + (#char == 4 and 2 or 1)
  end
  return units
end

-- The LSP range of whole lines `first`..`last` (1-based, inclusive) of a buffer.
local function line_range(bufnr, first, last)
  local text = vim.api.nvim_buf_get_lines(bufnr, last - 1, last, false)[1] or ''
  return {
    start = { line = first - 1, character = 0 },
    ['end'] = { line = last - 1, character = utf16_len(text) },
  }
end

-- Sends `larik/prompt` and keeps the outcome for `status()`.
local function send_prompt(client, params, bufnr)
  request(client, 'larik/prompt', params, function(err, result)
    state.running = math.max(state.running - 1, 0)
    state.prompts_done = state.prompts_done + 1
    if err then
      state.last_error = err.message or vim.inspect(err)
      state.last_stop_reason = nil
      chat.add('! ' .. state.last_error)
      return
    end
    state.last_error = nil
    note_session(result and result.sessionId)
    state.last_stop_reason = result and result.stopReason
  end, bufnr)
end

--- Sends a prompt. `opts.bufnr` (default the current buffer) goes along as the document when
--- it is a file, and `opts.range = {first, last}` (1-based lines) as the selection.
function M.prompt(text, opts)
  opts = opts or {}
  if text == nil or vim.trim(text) == '' then
    notify_error('empty prompt')
    return
  end
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local params = { prompt = text }
  local document = is_document(bufnr)
  if document then
    params.textDocument = { uri = vim.uri_from_bufnr(bufnr) }
    if opts.range then
      params.range = line_range(bufnr, opts.range[1], opts.range[2])
    end
  end
  if M.config.open_chat then
    chat.show()
  end
  chat.add('> ' .. text)
  state.running = state.running + 1
  local id = ensure_client()
  if not id then
    state.running = state.running - 1
    return
  end
  if document then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  with_client(function(client)
    with_session(client, function(session_id)
      params.sessionId = session_id
      send_prompt(client, params, bufnr)
    end)
  end)
end

--- Cancels the running prompt of the current session.
function M.cancel()
  if not state.session_id or not state.client_id then
    notify_error('no session to cancel')
    return
  end
  local session_id = state.session_id
  with_client(function(client)
    request(client, 'larik/cancel', { sessionId = session_id }, function(err)
      if err then
        notify_error(err.message or 'cancel failed')
      end
    end)
  end)
end

--- Starts a new session: the next prompt goes there. The chat buffer keeps the earlier
--- sessions above a separator.
function M.new_session()
  state.session_id = nil
  state.earlier_ids = {}
  with_client(function(client)
    with_session(client, function(session_id)
      if session_id then
        chat.add({ '', '── new session ' .. session_id .. ' ──' })
      end
    end)
  end)
end

-- The slash commands of the current session: cached, else asked of a running server.
local function slash_commands()
  if state.commands then
    return state.commands
  end
  local client = state.client_id and state.initialized and vim.lsp.get_client_by_id(state.client_id)
  if not client then
    return {}
  end
  local params = state.session_id and { sessionId = state.session_id } or vim.empty_dict()
  local response
  if vim.fn.has('nvim-0.11') == 1 then
    response = client:request_sync('larik/commands', params, 2000)
  else
    response = client.request_sync('larik/commands', params, 2000)
  end
  local commands = response and response.result and response.result.commands
  if type(commands) ~= 'table' then
    return {}
  end
  state.commands = commands
  return commands
end

--- Completion for `:Larik`: while the prompt is one word starting with `/`, the session's
--- slash commands that start with it.
function M.complete(arglead, cmdline)
  local typed = cmdline:match('Larik!?%s+(.*)$') or ''
  if typed:sub(1, 1) ~= '/' or typed:find('%s') then
    return {}
  end
  local names = {}
  for _, command in ipairs(slash_commands()) do
    local name = '/' .. tostring(command.name)
    if name:sub(1, #arglead) == arglead then
      table.insert(names, name)
    end
  end
  return names
end

--- The `:Larik` command: the arguments are the prompt; with none, asks for one.
function M.command(args)
  local range = nil
  if args.range and args.range > 0 then
    range = { args.line1, args.line2 }
  end
  local bufnr = vim.api.nvim_get_current_buf()
  if args.args ~= nil and vim.trim(args.args) ~= '' then
    M.prompt(args.args, { bufnr = bufnr, range = range })
    return
  end
  vim.ui.input({ prompt = 'Larik: ' }, function(text)
    if text and vim.trim(text) ~= '' then
      M.prompt(text, { bufnr = bufnr, range = range })
    end
  end)
end

return M
