-- Session control in the Neovim plugin, run by tests/nvim_cases/control.rs like e2e.lua:
-- `:Larik /<Tab>` completes the session's slash commands, `/rewind 1` continues in a branch
-- and offers the prompt again in `vim.ui.input`, `/resume ID` shows the stored conversation
-- and continues it, and `/context` shows Larik's own answer in the chat.
--
-- Input (JSON file named by $LARIK_NVIM_TEST): {larik, lib, result}.

local common = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':h') .. '/common.lua')
local wait_for, chat_has = common.wait_for, common.chat_has
local input = vim.fn.json_decode(table.concat(vim.fn.readfile(vim.env.LARIK_NVIM_TEST), '\n'))
local result = {}

-- The prompt input the plugin opens for a rewound prompt: remember what it offered, send
-- nothing.
vim.ui.input = function(opts, on_confirm)
  result.input_default = opts.default or vim.NIL
  on_confirm(nil)
end

local function scenario()
  vim.cmd('runtime plugin/larik.lua')
  local larik = require('larik')
  larik.setup({ cmd = { input.larik, 'lsp' } })

  vim.cmd('Larik prompt one')
  wait_for('the first prompt', function()
    return larik.status().prompts_done >= 1
  end)
  local first = larik.status().session_id
  result.first_session = first

  result.completion_all = vim.fn.getcompletion('Larik /', 'cmdline')
  result.completion_re = vim.fn.getcompletion('Larik /re', 'cmdline')
  result.completion_after_space = vim.fn.getcompletion('Larik /resume ', 'cmdline')
  result.completion_of_text = vim.fn.getcompletion('Larik hello', 'cmdline')

  vim.cmd('Larik /rewind 1')
  wait_for('the rewind', function()
    return larik.status().prompts_done >= 2 and result.input_default ~= nil
  end)
  result.rewound_session = larik.status().session_id
  result.rewound_prompt = larik.status().rewound_prompt or vim.NIL

  vim.cmd('Larik /resume ' .. first)
  wait_for('the resume', function()
    return larik.status().prompts_done >= 3
  end)
  result.resumed_session = larik.status().session_id

  vim.cmd('Larik /context')
  wait_for('the context report', function()
    return larik.status().prompts_done >= 4 and chat_has('The next request holds')
  end)
  result.chat = require('larik.chat').lines()
end

common.finish(scenario, result, input.result)
