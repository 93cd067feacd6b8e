-- `:checkhealth larik`: is Neovim new enough, and does the configured `larik` binary run
-- and know `larik lsp`?

local M = {}

-- Neovim 0.9 moved the reporters to `vim.health.start/ok/...`; 0.7 and 0.8 have
-- `require('health').report_start/report_ok/...`.
local function reporter()
  if vim.health and vim.health.start then
    return vim.health
  end
  local old = require('health')
  return {
    start = old.report_start,
    ok = old.report_ok,
    warn = old.report_warn,
    error = old.report_error,
    info = old.report_info,
  }
end

--- Runs the checks.
function M.check()
  local health = reporter()
  health.start('larik')

  local version = vim.version()
  local shown = string.format('%d.%d.%d', version.major, version.minor, version.patch)
  if vim.fn.has('nvim-0.7') == 1 then
    health.ok('Neovim ' .. shown)
  else
    health.error('Neovim ' .. shown .. ' is too old: the plugin needs 0.7 or newer')
  end

  local cmd = require('larik').config.cmd
  local binary = cmd[1]
  if vim.fn.executable(binary) ~= 1 then
    health.error(binary .. ' is not executable', {
      'Build it with `cargo build --release` and put it on PATH,',
      "or point the plugin at it: require('larik').setup({ cmd = { '/path/to/larik', 'lsp' } })",
    })
    return
  end
  local path = vim.fn.exepath(binary)
  local output = vim.fn.system({ binary, '--version' })
  if vim.v.shell_error ~= 0 then
    health.error(path .. ' --version failed: ' .. vim.trim(output))
    return
  end
  health.ok(path .. ': ' .. vim.trim(output))

  vim.fn.system({ binary, 'lsp', '--help' })
  if vim.v.shell_error ~= 0 then
    health.error(path .. ' has no `lsp` command: update Larik')
  else
    health.ok('`larik lsp` is available')
  end
end

return M
