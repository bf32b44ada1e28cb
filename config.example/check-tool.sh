#!/bin/sh
# A PreToolUse hook (hooks.json): Ania writes the tool call as JSON on stdin (hook_event_name,
# session_id, tool_name, tool_input, ...). Exit 0 lets the call run, and what this prints on stdout
# becomes context for the model; exit 2 blocks the call, and stderr is the reason the model reads.
payload=$(cat)
case "$payload" in
  *'rm -rf'* | *'mkfs'*)
    echo "check-tool.sh: this command is not allowed here" >&2
    exit 2 ;;
esac
exit 0
