#!/usr/bin/env bash
# The guest harness itself (suite interop): rxe-vm up boots a guest with rxe0
# on GID index 1 (IPv4-mapped RoCEv2), run returns the command's own exit
# code and output (quotes intact), -b/wait run in the background, the guest
# reaches the host over the bridge, and down leaves nothing behind: the qemu
# process is gone and the namespace with its bridge, tap and veth deleted,
# within bounded time. Exit 77 where qemu cannot run.
set -u
vm=$(readlink -f "$1")
work=$(mktemp -d /tmp/droce-harness-XXXXXX)
trap '"$vm" down "$work/vm"; rm -rf "$work"' EXIT
trap 'exit 143' TERM INT
fail() { echo "FAIL: $*"; exit 1; }

"$vm" up "$work/vm"
rc=$?
[ $rc = 0 ] || exit $rc
. "$work/vm/env"
qpid=$(cat "$work/vm/g0/qemu.pid")
kill -0 "$qpid" || fail "no qemu process $qpid"

out=$("$vm" run "$work/vm" 0 "echo \"it's \$((6 * 7))\"; exit 3")
rc=$?
[ $rc = 3 ] || fail "run returned $rc, want the command's 3"
[ "$out" = "it's 42" ] || fail "run printed '$out'"

gid=$("$vm" run "$work/vm" 0 "cat /sys/class/infiniband/rxe0/ports/1/gids/1")
want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' $(echo "$GUEST_IP_0" | tr . ' '))
[ "$gid" = "$want" ] || fail "rxe0 GID 1 is '$gid', want $want (IPv4-mapped $GUEST_IP_0)"

id=$("$vm" run "$work/vm" 0 -b "sleep 1; echo background")
[ -n "$id" ] || fail "run -b gave no id"
out=$("$vm" wait "$work/vm" "$id" 30)
[ $? = 0 ] && [ "$out" = background ] || fail "wait: '$out'"

# bounded: a command that overstays its -t is stopped in the guest
start=$SECONDS
"$vm" run "$work/vm" 0 -t 2 "sleep 60" >/dev/null
rc=$?
[ $rc != 0 ] && [ $((SECONDS - start)) -lt 30 ] || fail "-t 2 on sleep 60: rc $rc after $((SECONDS - start)) s"

ip netns exec "$NS" ping -c 1 -W 5 "$GUEST_IP_0" >/dev/null || fail "no ping from the namespace to the guest"
"$vm" run "$work/vm" 0 "ping -c 1 -W 5 $HOST_IP" >/dev/null || fail "no ping from the guest to $HOST_IP"

start=$SECONDS
"$vm" down "$work/vm"
[ $((SECONDS - start)) -lt 30 ] || fail "down took $((SECONDS - start)) s"
kill -0 "$qpid" 2>/dev/null && fail "qemu $qpid still runs after down"
ip netns list | grep -qw "$NS" && fail "namespace $NS still exists after down"
echo "PASS: rxe-vm up/run/wait/down, rxe0 GID 1 = $want, nothing left behind"
exit 0
