# bash completion for trapstat-exporter(1)                           -*- shell-script -*-
# SPDX-License-Identifier: MIT

_trapstat_exporter() {
    local cur prev words cword
    _init_completion || return

    case $prev in
        --socket | -s)
            _filedir
            return ;;
        --listen | -l)
            COMPREPLY=($(compgen -W "127.0.0.1:9472 [::1]:9472 0.0.0.0:9472 :9472" -- "$cur"))
            return ;;
        --timeout | -t | --header-timeout | --body-timeout | --send-timeout)
            COMPREPLY=($(compgen -W "1s 5s 10s 30s" -- "$cur"))
            return ;;
        --unit-limit | -u | --process-series | -p | --max-connections)
            return ;;  # a number
        --help | -h | --version)
            return ;;
    esac
    COMPREPLY=($(compgen -W "--socket --listen --unit-limit --process-series --timeout --max-connections --header-timeout --body-timeout --send-timeout --help --version" -- "$cur"))
} &&
    complete -F _trapstat_exporter trapstat-exporter
