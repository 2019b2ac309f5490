#!/usr/bin/python3
"""Lossy captures replay: for every capture of a lossy
link in pcap/ (the generated pcap/lossy-*.pcap, rxe as tcpdump on the qemu
bridge would see it, and the real droce-perf captures in pcap/lossy/),
derive a scenario for each side and replay it: every side must match.
pcap/lossy/NAME.sides lists a real capture's sides, one per line, as
"IP [impair=SPEC]" (the side ran droce-perf --impair SPEC behind the
capture point); generated captures use every address --sides reports.

Then the comparison must still bite on such captures: for each side, a
copy of the capture with one byte of the side's last payload changed, and
one with a byte of a retransmitted copy changed (ICRC recomputed), must
make the replay of the scenario derived from the untouched capture fail
(exit 1); the second must also make --derive refuse (exit 2: a packet
resent with other contents).

usage: lossy.py DROCE_REPLAY PCAP_DIR WORKDIR
"""
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mutate import read_pcap, write_pcap, layout, fix_icrc, src_ip, ip_bytes, EXT, mutations  # noqa: E402


def run(*args):
    """(exit code, stdout); stderr is appended after it only on failure."""
    p = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    return p.returncode, p.stdout + (p.stderr if p.returncode else '')


def captures(pcapdir):
    out = []
    for cap in sorted(glob.glob(os.path.join(pcapdir, 'lossy-*.pcap'))):
        out.append((cap, None))
    for cap in sorted(glob.glob(os.path.join(pcapdir, 'lossy', '*.pcap'))):
        sides = []
        with open(cap[:-5] + '.sides') as f:
            for line in f:
                w = line.split('#')[0].split()
                if w:
                    imp = [x[7:] for x in w[1:] if x.startswith('impair=')]
                    sides.append((w[0], imp[0] if imp else None))
        out.append((cap, sides))
    return out


def payload_frames(frames, side):
    """Indexes of the side's RoCE frames with payload, and of its retransmitted requests."""
    pay, seen, retx = [], {}, []
    for i, (_, _, d) in enumerate(frames):
        lay = layout(d)
        if lay is None or src_ip(d) != ip_bytes(side):
            continue
        _, _, bth, end = lay
        op = d[bth]
        ext = EXT.get(op)
        if ext is None:
            continue
        pad = (d[bth + 1] >> 4) & 3
        plen = end - 4 - pad - (bth + 12 + ext)
        if plen <= 0:
            continue
        pay.append(i)
        if op <= 0x0B:  # a SEND or WRITE request
            key = (bytes(d[bth + 5:bth + 8]), bytes(d[bth + 9:bth + 12]))
            if key in seen:
                retx.append(i)
            seen[key] = i
    return pay, retx


def tamper(cap, frames, hdr, i, work, tag, side):
    """A copy of the capture with frame i changed: `payload` and `resent` flip
    its last payload byte, `msn+1` and `ext-hdr` are mutate.py's."""
    m = [list(f) for f in frames]
    d = bytearray(m[i][2])
    if tag in ('msn+1', 'ext-hdr'):
        dict(mutations(d))[tag](d)
    else:
        _, _, bth, end = layout(d)
        pad = (d[bth + 1] >> 4) & 3
        d[end - 4 - pad - 1] ^= 0x01
    fix_icrc(d)
    m[i][2] = d
    out = os.path.join(work, '%s-%s-%s-f%d.pcap' % (os.path.basename(cap)[:-5], tag, side, i + 1))
    write_pcap(out, hdr, m)
    return out


def main():
    replay, pcapdir, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    fail = 0
    totals = {'lost': 0, 'deliver': 0, 'impair': 0}
    caps = captures(pcapdir)
    if not caps:
        print('FAIL: no lossy captures in %s' % pcapdir)
        return 1
    for f in sorted(glob.glob(os.path.join(pcapdir, 'lossy', '*'))):
        if os.path.getsize(f) >= 102400:
            print('FAIL: %s is %d bytes (fixtures stay < 100 KB)' % (f, os.path.getsize(f)))
            fail = 1
    for cap, sides in caps:
        base = os.path.basename(cap)[:-5]
        if sides is None:
            rc, out = run(replay, '--sides', cap)
            sides = [(ip, None) for ip in out.split()]
        if len(sides) != 2:
            print('FAIL %s: %d sides, want both of a conversation' % (base, len(sides)))
            fail = 1
        hdr, frames = read_pcap(cap)
        for side, imp in sides:
            name = '%s-%s' % (base, side)
            scn = os.path.join(work, name + '.scn')
            args = [replay, '--derive', cap, '--side', side] + (['--impair', imp] if imp else [])
            rc, text = run(*args)
            if rc != 0:
                print('FAIL %s: derive exit %d: %s' % (name, rc, text.strip()))
                fail = 1
                continue
            with open(scn, 'w') as f:
                f.write(text)
            counts = {k: sum(1 for l in text.splitlines() if l.startswith(k + ' ')) for k in totals}
            for k in totals:
                totals[k] += counts[k]
            rc, out = run(replay, scn)
            if rc != 0:
                print('FAIL %s: replay exit %d' % (name, rc))
                print(out)
                fail = 1
                continue
            print('ok   %s: derived (%d lost, %d delivered late%s) and replayed: MATCH'
                  % (name, counts['lost'], counts['deliver'], ', impair ' + imp if imp else ''))
            # the comparison bites
            pay, retx = payload_frames(frames, side)
            checks = [('payload', pay[-1])] if pay else []
            for want in ([] if pay else ['msn+1', 'ext-hdr']):
                # no payload from this side: the MSN of its last answer, or
                # the RETH/AtomicETH of its last request
                for i in range(len(frames) - 1, -1, -1):
                    d = frames[i][2]
                    if layout(d) is not None and src_ip(d) == ip_bytes(side) and \
                            any(n == want for n, _ in mutations(d)):
                        checks = [(want, i)]
                        break
                if checks:
                    break
            if retx:
                checks.append(('resent', retx[-1]))
            for tag, i in checks:
                bad = tamper(cap, frames, hdr, i, work, tag, side)
                tscn = os.path.join(work, '%s-%s.scn' % (name, tag))
                with open(tscn, 'w') as f:
                    f.write(''.join('capture %s\n' % bad if l.startswith('capture ') else l + '\n'
                                    for l in text.splitlines()))
                rc, out = run(replay, tscn)
                if rc != 1:
                    print('FAIL %s: a changed field in frame %d (%s) gave exit %d, want 1'
                          % (name, i + 1, tag, rc))
                    fail = 1
                    continue
                msg = 'ok   %s: a changed field in frame %d (%s) is a mismatch' % (name, i + 1, tag)
                if tag == 'resent':
                    rc, out = run(*([replay, '--derive', bad, '--side', side] +
                                    (['--impair', imp] if imp else [])))
                    if rc != 2 or 'resent with other contents' not in out:
                        print('FAIL %s: --derive took a resend with other contents (exit %d): %s'
                              % (name, rc, out.strip()[:200]))
                        fail = 1
                        continue
                    msg += ', and --derive refuses it'
                print(msg)
    # the fixtures must keep exercising what they are for
    if not totals['lost'] or not totals['deliver']:
        print('FAIL: the lossy captures no longer show a packet lost before the capture point '
              '(%d) or an answer that crossed on the wire (%d)' % (totals['lost'], totals['deliver']))
        fail = 1
    print('%d lost packets, %d late deliveries, %d impaired sides over %d captures'
          % (totals['lost'], totals['deliver'], totals['impair'], len(caps)))
    return fail


if __name__ == '__main__':
    sys.exit(main())
