-- The commands of the Larik plugin; everything else loads on first use.

if vim.g.loaded_larik then
  return
end
vim.g.loaded_larik = true

vim.api.nvim_create_user_command('Larik', function(args)
  require('larik').command(args)
end, {
  nargs = '*',
  range = true,
  complete = function(arglead, cmdline)
    return require('larik').complete(arglead, cmdline)
  end,
  desc = 'Ask Larik (the selected lines go along); /commands complete with <Tab>',
})

vim.api.nvim_create_user_command('LarikCancel', function()
  require('larik').cancel()
end, { nargs = 0, desc = "Cancel Larik's running prompt" })

vim.api.nvim_create_user_command('LarikNew', function()
  require('larik').new_session()
end, { nargs = 0, desc = 'Start a new Larik session' })
