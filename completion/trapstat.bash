# bash completion for trapstat(1)                                    -*- shell-script -*-
# SPDX-License-Identifier: MIT

_trapstat() {
    local cur prev words cword
    _init_completion || return

    local verbs="top history sites procs traps status call"
    local global_opts="--socket --json --help --version"
    local verb="" i
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --socket | -S) ((i++)) ;;
            -*) ;;
            *) verb=${words[i]}; break ;;
        esac
    done

    case $prev in
        --socket | -S)
            _filedir
            return ;;
        --sort | -s)
            COMPREPLY=($(compgen -W "user kernel minor major file anon shmem read write exec protection traps time stall" -- "$cur"))
            return ;;
        --since | --until)
            COMPREPLY=($(compgen -W "15m 1h 2h 1d 3d now" -- "$cur"))
            return ;;
        --step)
            COMPREPLY=($(compgen -W "10s 1m 10m 1h" -- "$cur"))
            return ;;
        --unit | -u)
            [[ $verb == procs || $verb == history ]] && { COMPREPLY=($(compgen -W "$(systemctl list-units --plain --no-legend --type=service,scope 2>/dev/null | awk '{print $1}')" -- "$cur")); return; } ;;
        --comm | -c)
            [[ $verb == procs ]] && { COMPREPLY=($(compgen -W "$(ps -eo comm= 2>/dev/null | sort -u)" -- "$cur")); return; } ;;
        -n | --iterations | -d | --delay | --window | -w | --limit | -l | --start-time | --pid | -p)
            return ;;
        --container)
            # Names of machined's machines; a docker or podman container goes by its id.
            COMPREPLY=($(compgen -W "$(machinectl list --no-legend 2>/dev/null | awk '{print $1}')" -- "$cur"))
            return ;;
    esac

    if [[ -z $verb ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global_opts" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
        fi
        return
    fi

    local opts=""
    case $verb in
        top) opts="--batch --stream --iterations --delay --window --sort --limit --pid --user --unit --comm --container --by --reconnect-timeout --json --help" ;;
        history) opts="--since --until --step --start-time --unit --container --histogram --json --csv --help" ;;
        sites) opts="--since --until --start-time --traps --faults --major --limit --json --csv --help" ;;
        procs) opts="--exited --comm --unit --container --pid --limit --json --csv --help" ;;
        traps) opts="--since --json --help" ;;
        status) opts="--json --help" ;;
        call)
            if [[ $cur != -* && ( $prev == call || $prev == --more || $prev == -m ) ]]; then
                COMPREPLY=($(compgen -W "io.trapstat.GetStatus io.trapstat.Top io.trapstat.History io.trapstat.UnitHistory io.trapstat.ContainerHistory io.trapstat.UnitTotals io.trapstat.Sites io.trapstat.ListProcesses
                    io.trapstat.Watch io.trapstat.Traps org.varlink.service.GetInfo
                    org.varlink.service.GetInterfaceDescription" -- "$cur"))
                return
            fi
            opts="--more --help" ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    elif [[ ( $verb == history || $verb == sites ) && $prev == "$verb" ]]; then
        # Pids of running processes; exited ones: trapstat procs --exited.
        COMPREPLY=($(compgen -W "$(ps -eo pid= 2>/dev/null)" -- "$cur"))
    elif [[ $verb == top ]]; then
        case $prev in
            -p|--pid) COMPREPLY=($(compgen -W "$(ps -eo pid= 2>/dev/null)" -- "$cur")) ;;
            -u|--user) COMPREPLY=($(compgen -u -- "$cur")) ;;
            --by) COMPREPLY=($(compgen -W "unit comm user container" -- "$cur")) ;;
            -s|--sort) COMPREPLY=($(compgen -W "user kernel minor major file anon shmem read write exec protection traps time stall" -- "$cur")) ;;
        esac
    fi
} && complete -F _trapstat trapstat
