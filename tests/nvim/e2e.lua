-- The Neovim plugin's end-to-end scenario, run by tests/nvim.rs in `nvim --headless -u NONE`
-- with editors/neovim on the runtimepath. It drives the plugin as a user would, through its
-- commands, answers `vim.ui.select` with a stub, and writes what it saw as JSON to the file
-- the input names; the Rust test asserts on that and on the disk.
--
-- Input (JSON file named by $LARIK_NVIM_TEST): {larik, lib, result}.
-- The scenario:
--   1. open `lib` and change it without saving;
--   2. `:1,3Larik …` with the lines as the selection; the model reads the file, edits it
--      (permission: allow_once) and Neovim's own handler applies the edit;
--   3. with confirm_edits on, `:Larik …` again; the model edits, the stub rejects the edit;
--   4. `:LarikNew`, then a prompt whose model answer hangs, cancelled with `:LarikCancel`;
--   5. `:checkhealth larik`.

local common = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/common.lua')
local wait_for, chat_has = common.wait_for, common.chat_has
local input = vim.fn.json_decode(table.concat(vim.fn.readfile(vim.env.LARIK_NVIM_TEST), '\n'))
local result = { selects = {}, steps = {} }

local function lines(bufnr)
  return vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
end

-- The answers the stub gives to edit confirmations, in order.
local edit_answers = { 'Reject' }

vim.ui.select = function(items, opts, on_choice)
  local entry = { kind = opts.kind or vim.NIL, prompt = opts.prompt or vim.NIL, items = {} }
  for _, item in ipairs(items) do
    table.insert(entry.items, opts.format_item and opts.format_item(item) or item)
  end
  local pick = nil
  if opts.kind == 'larik_permission' then
    for _, item in ipairs(items) do
      if item.optionId == 'allow_once' then
        pick = item
      end
    end
    entry.picked = pick and pick.optionId or vim.NIL
  elseif opts.kind == 'larik_edit' then
    pick = table.remove(edit_answers, 1)
    entry.picked = pick or vim.NIL
  end
  table.insert(result.selects, entry)
  on_choice(pick)
end

local function snapshot(name, lib_buf)
  local larik = require('larik')
  local status = larik.status()
  table.insert(result.steps, {
    name = name,
    session_id = status.session_id or vim.NIL,
    stop_reason = status.last_stop_reason or vim.NIL,
    error = status.last_error or vim.NIL,
    lib = lines(lib_buf),
  })
end

local function scenario()
  vim.cmd('runtime plugin/larik.lua')
  local larik = require('larik')
  larik.setup({ cmd = { input.larik, 'lsp' } })

  vim.cmd('edit ' .. vim.fn.fnameescape(input.lib))
  local lib_buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(lib_buf, 1, 2, false, { '    "unsaved"' })

  vim.cmd('1,3Larik make greet friendlier')
  wait_for('the first prompt', function()
    return larik.status().prompts_done >= 1
  end)
  result.current_buffer_after_prompt = vim.api.nvim_buf_get_name(0)
  snapshot('applied', lib_buf)

  larik.setup({ confirm_edits = true })
  vim.cmd('Larik now make it shout')
  wait_for('the second prompt', function()
    return larik.status().prompts_done >= 2
  end)
  snapshot('rejected', lib_buf)

  local old_session = larik.status().session_id
  vim.cmd('LarikNew')
  wait_for('the new session', function()
    local session = larik.status().session_id
    return session ~= nil and session ~= old_session
  end)
  vim.cmd('Larik take your time')
  wait_for('the hanging answer to start', function()
    return chat_has('Pondering')
  end)
  vim.cmd('LarikCancel')
  wait_for('the cancelled prompt', function()
    return larik.status().prompts_done >= 3
  end)
  result.cancel_event_before_reply = chat_has('— cancelled')
  -- The reply and the last event travel apart; the chat gets the event too.
  wait_for('the end of the cancelled turn in the chat', function()
    return chat_has('— cancelled')
  end)
  snapshot('cancelled', lib_buf)

  result.chat = require('larik.chat').lines()
  result.chat_filetype = vim.api.nvim_buf_get_option(require('larik.chat').bufnr(), 'filetype')

  vim.cmd('checkhealth larik')
  result.health = lines(0)
end

common.finish(scenario, result, input.result)
