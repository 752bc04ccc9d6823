# --help for the project's scripts. Source it before anything else, with the
# script's arguments:
#   . "$(dirname "$0")/help.sh" "$@"        (tools/bench: .../../help.sh)
# With -h or --help first it prints the script's first comment (its lines
# after #!, without their "# ") and exits 0, having done nothing else;
# otherwise it does nothing.
case "${1:-}" in
-h | --help)
  sed -n '2,/^[^#]/{/^#/{s/^# \{0,1\}//;p}}' "$0"
  exit 0
  ;;
esac
