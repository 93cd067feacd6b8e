" Highlighting of the Larik chat buffer (filetype larik): prompts, tool calls, results,
" diffs, questions, errors and turn ends; the model's text stays plain.
if exists('b:current_syntax')
  finish
endif

syntax match larikPrompt /^> .*$/
syntax match larikToolCall /^→ .*$/
syntax match larikDone /^✓ .*$/
syntax match larikFailed /^✗ .*$/
syntax match larikDiff /^± .*$/
syntax match larikQuestion /^? .*$/
syntax match larikError /^! .*$/
syntax match larikNote /^[·↻↶] .*$/
syntax match larikTurnEnd /^— .*$/
syntax match larikSession /^── .*$/

highlight default link larikPrompt Title
highlight default link larikToolCall Function
highlight default link larikDone String
highlight default link larikFailed WarningMsg
highlight default link larikDiff Type
highlight default link larikQuestion Question
highlight default link larikError ErrorMsg
highlight default link larikNote Comment
highlight default link larikTurnEnd Comment
highlight default link larikSession Comment

let b:current_syntax = 'larik'
