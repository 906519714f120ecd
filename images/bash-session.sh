# shellcheck shell=bash
# bash-session.sh is the rcfile of Bash's session stub, installed as
# /opt/sandbox/stubs/bash-session.sh (docs/design/runtimes.md, "The stubs"):
# an interactive shell whose commands are the supervisor's request lines on
# its descriptor 0, one a call (internal/supervisor, bashRequest):
#
#   \__sb_read N PATH CALL && \builtin eval "$__sb_code" <"$__sb_in" 3<&- 4>&-
#
# the code on 3, and the replies on 4: "ready" once, then "done <status> 0 0
# CALL" after each call. The code runs at the shell's top level, so its
# variables, functions, cd, exports, traps and aliases are the next call's;
# its stdin is the call's (or /dev/null), and it reaches neither 3 nor 4 by
# number (the shell keeps them aside while it runs, closed on exec). An
# interactive shell abandons the whole command on SIGINT, the call's
# interrupt, and reports 130.
#
# The stub's own names are called as builtins or quoted past aliases, its
# functions and PROMPT_COMMAND are read-only, and PROMPT_COMMAND never fails
# a command (errexit would end the shell), so a program's functions named
# printf or read, its aliases and its options do not break the session.
PS1= PS2= PS0= BASH_ARGV0=main.sh
unset HISTFILE
unset -f command_not_found_handle
set +o history +H +m
__sb_ran= __sb_x= __sb_code= __sb_in=/dev/null __sb_reply=

# __sb_read N PATH CALL reads N characters of code from 3 into __sb_code
# (in the C locale, where a character is a byte: read drops NUL bytes and
# does not count them, so N leaves them out), the call's stdin path into
# __sb_in ("-" is none: /dev/null) and its number into __sb_ran. The xtrace
# the last call left on, which __sb_done put aside, is set again for the
# code alone, so the shell's own commands are never traced. (verbose cannot
# be put aside: bash restores it after PROMPT_COMMAND, so a verbose shell
# shows the request lines too.)
__sb_read() {
  builtin local LC_ALL=C
  __sb_ran=$3 __sb_code= __sb_in=$2
  if [[ $__sb_in == - ]]; then __sb_in=/dev/null; fi
  IFS= builtin read -r -N "$1" -u 3 __sb_code
  if [[ -n $__sb_x ]]; then __sb_code="builtin set -x; $__sb_code"; fi
}

# __sb_done reports the status of the call that just ended, $1, on 4: the
# first prompt follows none. The line is made first and written by one
# builtin into line-buffered stdout, so one write: an interrupt that comes
# meanwhile (the supervisor sends it again until the done) cuts the line
# whole or not at all, where printf's format would have left its first
# bytes behind, to reach the call's stdout. An interrupt after the write
# and before __sb_ran is cleared makes the next prompt say it again; the
# call's number lets the supervisor drop that copy.
__sb_done() {
  __sb_x=${-//[^x]/}
  if [[ -n $__sb_x ]]; then builtin set +x; fi
  if [[ -n $__sb_ran ]]; then
    builtin printf -v __sb_reply 'done %d 0 0 %d\n' "$1" "$__sb_ran"
    builtin printf '%s' "$__sb_reply" >&4
    __sb_ran=
  fi
}

# Run before each prompt, its stderr (a trace of it) dropped.
PROMPT_COMMAND='{ \__sb_done "$?"; } 2>/dev/null'
readonly PROMPT_COMMAND
readonly -f __sb_read __sb_done
builtin printf 'ready\n' >&4
