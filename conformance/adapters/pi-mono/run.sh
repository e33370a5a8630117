#!/bin/sh
exec node "$(dirname "$0")/adapter.mjs" "$@"
