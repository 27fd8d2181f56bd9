# The candidates zsh's completion offers for a command line, one a line:
# a real interactive zsh in a pseudo-terminal (zsh/zpty) with compinit and
# DIR on fpath, so _lazyagent-oci is autoloaded on the first Tab as the
# installed file is; a wrapper around compadd prints what is offered.
# usage: zsh -f zsh_complete.zsh DIR LINE
zmodload zsh/zpty
dir=$1 line=$2
zpty z zsh -f -i
zpty -w z "PS1= ; fpath=($dir \$fpath); autoload -Uz compinit; compinit -u -D; bindkey '^I' complete-word"
zpty -w z 'compprefuncs=( __mark ); __mark() { comppostfuncs=( __done ) }; __done() { print -r -- "<done>" }'
zpty -w z 'compadd () { builtin compadd -O __hits "$@"; print -rl -- "<cand>"${^__hits}; builtin compadd "$@" }'
zpty -w z "print -r -- '<ready>'"
zpty -r z out '*<ready>*'
zpty -w -n z "$line"$'\t'
zpty -r z out '*<done>*'
print -r -- "$out" | tr -d '\r' | grep -ao '<cand>[^<]*' | sed 's/<cand>//' | sort -u
zpty -d z
