#!/usr/bin/python3
"""--derive on captures that begin with an rdma_cm handshake (suite pcap).

  - pcap/cm-write.pcap (generated, pcap/gen): for each side, the derived
    scenario names the handshake, takes the QPNs and both starting PSNs
    from the REQ/REP (the passive side's send PSN shows nowhere else:
    it sends no request) and replays to a match;
  - tampered copies (generated the same way with one thing broken: the
    REP's QPN, the REP's PSN, the RTU's comm ID, the REP's transaction ID,
    the DREQ's QPN, a resent REQ naming another QP) must be refused by
    --derive with a message naming the frame; an unchanged resent REQ and a
    REQ with a bad ICRC (never seen by the CM) must not change the result;
  - ../shared/pcap-corpus/rxe-*.pcap (skipped when absent): every side's
    scenario carries the handshake's PSNs (Linux's CM: the REQ's PSN is the
    active side's receive PSN, the REP's its send PSN) and replays.

usage: cm.py DROCE_REPLAY PCAP_DIR SHARED_CORPUS WORKDIR
"""
import glob
import os
import re
import subprocess
import sys

failures = []


def fail(msg):
    failures.append(msg)
    print('FAIL: ' + msg)


def run(*args):
    p = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def qp_line(scn):
    m = re.search(r'^qp \S+ local=(\S+) peer=(\S+) .* sq-psn=(\d+) rq-psn=(\d+) mtu=(\d+)', scn,
                  re.M)
    return tuple(int(x, 0) for x in m.groups()) if m else None


def derive_replay(replay, cap, side, work, want_qp=None, want_cm=None):
    scn_path = os.path.join(work, '%s-%s.scn' % (os.path.basename(cap), side))
    rc, scn, err = run(replay, '--derive', cap, '--side', side)
    if rc != 0:
        fail('%s side %s: derive exit %d: %s' % (cap, side, rc, err.strip()))
        return
    with open(scn_path, 'w') as f:
        f.write(scn)
    got = qp_line(scn)
    if want_qp and got != want_qp:
        fail('%s side %s: qp (local, peer, sq-psn, rq-psn, mtu) %s, want %s' %
             (cap, side, got, want_qp))
    if want_cm and want_cm not in scn:
        fail('%s side %s: %r not in the scenario:\n%s' % (cap, side, want_cm, scn))
    rc, out, err = run(replay, scn_path)
    if rc != 0:
        fail('%s side %s: replay exit %d:\n%s%s' % (cap, side, rc, out, err))
    else:
        print('ok   %s side %s: %s' % (os.path.basename(cap), side, got))


def main():
    replay, pcap_dir, corpus, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    sys.path.insert(0, os.path.join(pcap_dir, 'gen'))
    import gen_fixtures as g  # noqa: E402
    from roce import write_pcap  # noqa: E402

    cap = os.path.join(pcap_dir, 'cm-write.pcap')
    derive_replay(replay, cap, g.D_IP, work,
                  (g.D_QPN, g.P_QPN, g.CM_REQ_PSN, g.CM_REP_PSN, g.MTU),
                  'rdma_cm with %s, the side passive: REQ frame 1, REP 2' % g.P_IP)
    derive_replay(replay, cap, g.P_IP, work,
                  (g.P_QPN, g.D_QPN, g.CM_REP_PSN, g.CM_REQ_PSN, g.MTU),
                  'rdma_cm with %s, the side active: REQ frame 1, REP 2' % g.D_IP)

    for tamper in ('req-resent', 'req-bad-icrc'):
        c = g.cm_conversation(tamper)
        path = os.path.join(work, 'cm-write-%s.pcap' % tamper)
        write_pcap(path, c.frames)
        derive_replay(replay, path, g.D_IP, work,
                      (g.D_QPN, g.P_QPN, g.CM_REQ_PSN, g.CM_REP_PSN, g.MTU), 'side passive')

    for tamper, frame in (('rep-qpn', 'no RC conversation'), ('rep-psn', 'frame 2'),
                          ('rtu-id', 'frame 3'), ('rep-tid', 'frame 2'), ('dreq-qpn', 'frame 9'),
                          ('req-resent-other', 'frame 2')):
        c = g.cm_conversation(tamper)
        path = os.path.join(work, 'cm-write-%s.pcap' % tamper)
        write_pcap(path, c.frames)
        rc, out, err = run(replay, '--derive', path, '--side', g.D_IP)
        if rc == 0:
            fail('%s: derive accepted a capture whose handshake and RC frames disagree' % tamper)
        elif frame not in err:
            fail('%s: derive exit %d without naming %s: %s' % (tamper, rc, frame, err.strip()))
        else:
            print('ok   tampered %s refused: %s' % (tamper, err.strip()))

    if not os.path.isdir(corpus):
        print('skip (corpus part): %s absent' % corpus)
    else:
        caps = sorted(glob.glob(os.path.join(corpus, 'rxe-*.pcap')))
        if not caps:
            fail('no rxe-*.pcap in ' + corpus)
        for cap in caps:
            rc, sides, err = run(replay, '--sides', cap)
            for side in sides.split():
                derive_replay(replay, cap, side, work, None, 'REP 2 (side QPN')
                with open(os.path.join(work, '%s-%s.scn' % (os.path.basename(cap), side))) as f:
                    scn = f.read()
                m = re.search(r'side QPN (\S+) sq-psn (\d+) rq-psn (\d+), peer QPN (0x[0-9a-f]+)', scn)
                q = qp_line(scn)
                if not m or not q or (int(m.group(1), 0), int(m.group(4), 0),
                                      int(m.group(2)), int(m.group(3))) != q[:4]:
                    fail('%s side %s: qp %s is not what the handshake set (%s)' %
                         (cap, side, q, m and m.group(0)))
    if failures:
        print('%d failure(s)' % len(failures))
        return 1
    print('ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
