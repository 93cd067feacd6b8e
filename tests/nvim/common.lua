-- What the Neovim scenarios share (loaded with dofile from beside them): the waits, a look
-- into the chat buffer, and the end every scenario has (run it, note an error and the chat
-- it left, write the result for the Rust test, quit).

local M = {}

local WAIT_MS = 90000

--- Waits until `condition()` holds; fails with the plugin's status after 90 s.
function M.wait_for(what, condition)
  if not vim.wait(WAIT_MS, condition, 20) then
    error('timed out waiting for ' .. what .. ': ' .. vim.inspect(require('larik').status()))
  end
end

--- Whether a line of the chat buffer contains `text`.
function M.chat_has(text)
  for _, line in ipairs(require('larik.chat').lines()) do
    if line:find(text, 1, true) then
      return true
    end
  end
  return false
end

--- Runs `scenario`, records an error (with the chat as it was) and the Neovim version in
--- `result`, writes `result` as JSON to `path`, and quits.
function M.finish(scenario, result, path)
  local ok, err = xpcall(scenario, debug.traceback)
  if not ok then
    result.error = err
    local chat_ok, chat = pcall(function()
      return require('larik.chat').lines()
    end)
    result.chat = chat_ok and chat or vim.NIL
  end
  result.nvim = tostring(vim.version().major) .. '.' .. tostring(vim.version().minor)
  vim.fn.writefile({ vim.fn.json_encode(result) }, path)
  vim.cmd('qa!')
end

return M
