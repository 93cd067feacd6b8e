-- The chat buffer: a scratch buffer (filetype `larik`) that shows the prompts sent and the
-- agent's events as they stream in. It only renders; it never talks to the server.

local M = {}

local NAME = 'larik://chat'

-- Rendering state: whether the last line is streamed message text still open for more, the
-- first line (0-based) of the message being streamed (a retry drops it), and the titles of
-- tool calls by call id (`tool_call_end` carries no title).
local state = { bufnr = nil, open_text = false, message_start = nil, titles = {} }

local function valid(bufnr)
  return bufnr ~= nil and vim.api.nvim_buf_is_valid(bufnr)
end

--- The chat buffer, created on first use.
function M.bufnr()
  if valid(state.bufnr) then
    return state.bufnr
  end
  local existing = vim.fn.bufnr(NAME)
  local bufnr = existing > 0 and existing or vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(bufnr, NAME)
  vim.api.nvim_buf_set_option(bufnr, 'buftype', 'nofile')
  vim.api.nvim_buf_set_option(bufnr, 'bufhidden', 'hide')
  vim.api.nvim_buf_set_option(bufnr, 'swapfile', false)
  vim.api.nvim_buf_set_option(bufnr, 'modifiable', false)
  vim.api.nvim_buf_set_option(bufnr, 'filetype', 'larik')
  state.bufnr = bufnr
  state.open_text = false
  state.message_start = nil
  state.titles = {}
  return bufnr
end

--- Shows the chat buffer in a split of the current tab unless a window there shows it,
--- keeping the cursor in the window it was in.
function M.show()
  local bufnr = M.bufnr()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      return
    end
  end
  local from = vim.api.nvim_get_current_win()
  vim.cmd('botright split')
  vim.api.nvim_win_set_buf(0, bufnr)
  vim.api.nvim_win_set_option(0, 'wrap', true)
  vim.api.nvim_set_current_win(from)
end

--- The chat buffer's lines.
function M.lines()
  return vim.api.nvim_buf_get_lines(M.bufnr(), 0, -1, false)
end

-- Writes lines [first, last) of the buffer (0-based, end exclusive) and keeps every window
-- that shows it scrolled to the end.
local function set_lines(first, last, lines)
  local bufnr = M.bufnr()
  vim.api.nvim_buf_set_option(bufnr, 'modifiable', true)
  vim.api.nvim_buf_set_lines(bufnr, first, last, false, lines)
  vim.api.nvim_buf_set_option(bufnr, 'modifiable', false)
  local count = vim.api.nvim_buf_line_count(bufnr)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      vim.api.nvim_win_set_cursor(win, { count, 0 })
    end
  end
end

-- True while the buffer holds only the one empty line a new buffer starts with.
local function empty()
  local bufnr = M.bufnr()
  return vim.api.nvim_buf_line_count(bufnr) == 1 and vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1] == ''
end

--- Adds whole lines after the last one: a list of lines, or a string (split on newlines).
function M.add(text)
  local lines = type(text) == 'table' and text or vim.split(text, '\n', { plain = true })
  if empty() then
    set_lines(0, -1, lines)
  else
    set_lines(-1, -1, lines)
  end
  state.open_text = false
end

--- Appends streamed message text: to the last line while the message is open, else on a
--- new line.
function M.stream(text)
  if text == nil or text == '' then
    return
  end
  local bufnr = M.bufnr()
  local parts = vim.split(text, '\n', { plain = true })
  if not state.open_text then
    if empty() then
      set_lines(0, -1, { '' })
    else
      set_lines(-1, -1, { '' })
    end
  end
  local last = vim.api.nvim_buf_line_count(bufnr)
  if state.message_start == nil then
    state.message_start = last - 1
  end
  local tail = vim.api.nvim_buf_get_lines(bufnr, last - 1, last, false)[1] or ''
  parts[1] = tail .. parts[1]
  set_lines(last - 1, last, parts)
  state.open_text = true
end

-- Counts the lines added and removed between two texts.
local function changed_lines(old, new)
  local diff = (vim.text and vim.text.diff) or vim.diff
  local added, removed = 0, 0
  local hunks = diff(old or '', new or '', { result_type = 'indices' })
  for _, hunk in ipairs(hunks) do
    removed = removed + hunk[2]
    added = added + hunk[4]
  end
  return added, removed
end

-- The first line of a text, for one-line summaries.
local function first_line(text)
  if type(text) ~= 'string' then
    return ''
  end
  return (text:match('^[^\n]*'))
end

-- One item of a stored conversation, as the chat shows it.
local function history_line(item)
  if item.role == 'user' then
    return '> ' .. tostring(item.text)
  elseif item.role == 'assistant' then
    return tostring(item.text)
  elseif item.mark == 'cleared' then
    return '· context cleared here'
  elseif item.mark == 'compacted' then
    return '· conversation compacted here'
  elseif item.tool then
    return (item.status == 'failed' and '✗ ' or '✓ ') .. tostring(item.tool)
  end
  return nil
end

--- Shows a `session_switched` event: where the conversation continues, and for a resume
--- the stored conversation.
function M.switched(event)
  local id = tostring(event.session_id)
  local said = ({
    clear = '── context cleared ──',
    fork = '── forked into session ' .. id .. ' ──',
    rewind = '── rewound into session ' .. id .. ' ──',
    resume = '── resumed session ' .. id .. ' ──',
  })[event.reason] or ('── now in session ' .. id .. ' ──')
  M.add({ '', said })
  if type(event.history) == 'table' then
    for _, item in ipairs(event.history) do
      local line = type(item) == 'table' and history_line(item) or nil
      if line then
        M.add(line)
      end
    end
  end
end

--- Renders one agent event (the `event` of a `larik/event` notification).
function M.event(event)
  local kind = event.type
  if kind == 'message_delta' then
    M.stream(event.text)
  elseif kind == 'tool_call_begin' then
    local title = event.title or event.tool or 'tool'
    state.titles[event.call_id or ''] = title
    M.add('→ ' .. title)
  elseif kind == 'tool_call_end' then
    local title = state.titles[event.call_id or ''] or event.call_id or 'tool'
    if event.status == 'completed' then
      M.add('✓ ' .. title)
    else
      M.add('✗ ' .. title .. ': ' .. first_line(event.output))
    end
  elseif kind == 'diff' then
    local change = event.change or {}
    local added, removed = changed_lines(change.old_text, change.new_text)
    local path = change.path or '?'
    local status = event.applied and '' or ' (proposed)'
    M.add(string.format('± %s +%d −%d%s', path, added, removed, status))
  elseif kind == 'permission_request' then
    M.add('? ' .. (event.title or event.tool or 'permission'))
  elseif kind == 'permission_denied' then
    M.add('✗ denied: ' .. first_line(event.reason))
  elseif kind == 'message_complete' then
    -- Text that was not streamed (Larik's own answers: /cost, /context, …) is shown now.
    if state.message_start == nil and type(event.text) == 'string' and event.text ~= '' then
      M.add(event.text)
    end
    state.message_start = nil
  elseif kind == 'session_switched' then
    M.switched(event)
  elseif kind == 'retrying' then
    -- The text streamed since the last complete message is sent again.
    if state.message_start ~= nil then
      set_lines(state.message_start, -1, {})
      state.message_start = nil
    end
    M.add('↻ retrying: ' .. first_line(event.reason))
  elseif kind == 'notice' then
    M.add('· ' .. first_line(event.message))
  elseif kind == 'error' then
    M.add('! ' .. (event.message or 'error'))
  elseif kind == 'mode_changed' then
    M.add('· mode: ' .. tostring(event.mode))
  elseif kind == 'model_changed' then
    M.add('· model: ' .. tostring(event.model))
  elseif kind == 'compacted' then
    M.add('· conversation compacted')
  elseif kind == 'undone' then
    if event.turn == nil or event.turn == vim.NIL then
      M.add('↶ nothing to undo')
    else
      M.add('↶ undid turn ' .. tostring(event.turn))
    end
  elseif kind == 'plan' then
    for _, entry in ipairs(event.entries or {}) do
      local mark = ({ completed = '[x]', in_progress = '[~]' })[entry.status] or '[ ]'
      M.add(mark .. ' ' .. tostring(entry.content))
    end
  elseif kind == 'turn_complete' then
    state.message_start = nil
    M.add('— ' .. tostring(event.stop_reason))
  end
end

return M
