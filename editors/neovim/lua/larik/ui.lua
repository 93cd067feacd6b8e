-- Asking the user from inside an LSP request handler: `vim.ui.select`, answered either by
-- suspending the handler's coroutine (current Neovim runs server requests in one) or, where
-- the handler must answer synchronously (Neovim 0.7), by waiting for the choice.

local M = {}

-- How long a synchronous question may stay open before it counts as unanswered.
local SYNC_TIMEOUT_MS = 10 * 60 * 1000

--- Asks `vim.ui.select(items, opts)` and returns the chosen item, or nil when the user
--- dismissed the question.
function M.select(items, opts)
  local co, is_main = coroutine.running()
  local yieldable = coroutine.isyieldable == nil or coroutine.isyieldable()
  if co and not is_main and yieldable then
    vim.ui.select(items, opts, function(choice)
      -- Resume later: a synchronous `vim.ui.select` calls back before we have yielded.
      vim.schedule(function()
        coroutine.resume(co, choice)
      end)
    end)
    return coroutine.yield()
  end
  local answered, answer = false, nil
  vim.ui.select(items, opts, function(choice)
    answered, answer = true, choice
  end)
  if not answered then
    vim.wait(SYNC_TIMEOUT_MS, function()
      return answered
    end, 20)
  end
  return answer
end

return M
