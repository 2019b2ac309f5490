/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce._droce: the CPython extension under the `droce` package
 * (docs/python.md), over droce's public C API: a context on a DPDK port
 * (droce/dpdk.h), its CM (droce/cm.h) to connect by address, QPs with a CQ
 * each, memory regions over the buffer protocol (zero copy: the region
 * holds the exporter's buffer, so a bytearray cannot be resized nor the
 * array freed while registered), work requests and completions
 * (droce/verbs.h).
 *
 * One context, one driver at a time: every call takes the context's lock;
 * calls that wait (connect, accept, poll_completion) drop the GIL and take
 * the lock one poll at a time, so the optional progress thread and other
 * Python threads get their turn. Time is droce_dpdk_now(), passed in.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include <droce/droce.h>
#include <droce/dpdk.h>

#define EVENTS_MAX 64
#define IDLE_SPINS 64u
#define NAP_NS 20000L
#define SIGNAL_CHECK_NS 50000000ull
#define PROGRESS_NAP_NS 50000L
#define LINK_WAIT_NS 10000000000ull
#define ACCESS_ALL (DROCE_ACCESS_LOCAL_WRITE | DROCE_ACCESS_REMOTE_WRITE | DROCE_ACCESS_REMOTE_READ | \
		    DROCE_ACCESS_REMOTE_ATOMIC)

static PyObject *Error, *CompletionError;
static PyTypeObject CompletionType;

typedef struct {
	PyObject_HEAD
	struct droce_ctx *ctx;
	struct droce_dpdk_port *port;
	pthread_mutex_t lock;
	struct droce_conn_event ev[EVENTS_MAX]; /* CM events nobody has taken yet */
	unsigned nev;
	pthread_t progress;
	bool has_progress;
	atomic_bool stop;
	unsigned mtu;
	uint8_t ip[4];
} Ctx;

typedef struct {
	PyObject_HEAD
	Ctx *ctx;
	struct droce_mr *mr;
	Py_buffer view;
	bool has_view;
	PyObject *owner; /* a raw registration's owner (a torch tensor) */
} MR;

typedef struct {
	PyObject_HEAD
	Ctx *ctx;
	struct droce_qp *qp;
	struct droce_cq *cq;
	int conn;
	bool connected;
	PyObject *peer_pd; /* the private data the peer sent */
} QP;

static PyTypeObject CtxType, MRType, QPType;

/* ---------------------------------------------------------------- errors -- */

static PyObject *raise_errno(int e, const char *what)
{
	if (e < 0)
		e = -e;
	PyObject *args = Py_BuildValue("(is)", e, what);
	if (args) {
		PyErr_SetObject(Error, args);
		Py_DECREF(args);
	}
	return NULL;
}

static PyObject *raise_msg(int e, const char *fmt, const char *a)
{
	char buf[256];
	snprintf(buf, sizeof(buf), fmt, a, strerror(e < 0 ? -e : e));
	return raise_errno(e, buf);
}

/* --------------------------------------------------------------- polling -- */

static void lock(Ctx *c)
{
	pthread_mutex_lock(&c->lock);
}

static void unlock(Ctx *c)
{
	pthread_mutex_unlock(&c->lock);
}

static void nap(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

/* One poll with the lock held; CM events collected. @return work done. */
static unsigned poll_locked(Ctx *c)
{
	unsigned n = droce_ctx_poll(c->ctx, droce_dpdk_now());
	while (c->nev < EVENTS_MAX && droce_get_cm_event(c->ctx, &c->ev[c->nev]) == 1) {
		/* the QP may be reused after this one; nobody waits for it */
		if (c->ev[c->nev].type == DROCE_CONN_TIMEWAIT_EXIT)
			continue;
		c->nev++;
		n++;
	}
	return n;
}

static void *progress_main(void *arg)
{
	Ctx *c = arg;
	droce_dpdk_thread_register();
	while (!atomic_load(&c->stop)) {
		lock(c);
		poll_locked(c);
		unlock(c);
		nap(PROGRESS_NAP_NS);
	}
	return NULL;
}

/* Take the first event @p match accepts. Lock held. */
typedef bool (*ev_match)(const struct droce_conn_event *ev, int id);

static bool take_event(Ctx *c, ev_match match, int id, struct droce_conn_event *out)
{
	for (unsigned i = 0; i < c->nev; i++)
		if (match(&c->ev[i], id)) {
			*out = c->ev[i];
			memmove(&c->ev[i], &c->ev[i + 1], (c->nev - i - 1) * sizeof(c->ev[0]));
			c->nev--;
			return true;
		}
	return false;
}

/*
 * Wait, without the GIL, until @p ready (called with the lock held) says
 * yes or @p timeout (seconds, < 0 forever) passes. Signals are looked at
 * every 50 ms with the GIL back (Ctrl-C works).
 * @return 1 ready, 0 timed out, -1 a Python exception is set.
 */
typedef bool (*ready_fn)(Ctx *c, void *arg);

static int wait_for(Ctx *c, ready_fn ready, void *arg, double timeout)
{
	uint64_t t0 = droce_dpdk_now(), next_sig = t0 + SIGNAL_CHECK_NS;
	uint64_t end = timeout < 0 ? UINT64_MAX : t0 + (uint64_t)(timeout * 1e9);
	unsigned idle = 0;
	int res = 0;
	Py_BEGIN_ALLOW_THREADS
	for (;;) {
		lock(c);
		unsigned n = poll_locked(c);
		bool ok = ready(c, arg);
		unlock(c);
		if (ok) {
			res = 1;
			break;
		}
		uint64_t now = droce_dpdk_now();
		if (now >= end)
			break;
		if (now >= next_sig) {
			next_sig = now + SIGNAL_CHECK_NS;
			int sig;
			Py_BLOCK_THREADS
			sig = PyErr_CheckSignals();
			Py_UNBLOCK_THREADS
			if (sig) {
				res = -1;
				break;
			}
		}
		if (n)
			idle = 0;
		else if (++idle >= IDLE_SPINS) {
			idle = 0;
			nap(NAP_NS);
		}
	}
	Py_END_ALLOW_THREADS
	return res;
}

/* --------------------------------------------------------------- Context -- */

static int ctx_init(Ctx *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"port", "ip", "eal", "progress_thread", "cc", NULL};
	const char *spec, *ip, *eal = NULL, *cc = NULL;
	int progress = 1;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "ss|zpz", kwlist, &spec, &ip, &eal, &progress, &cc))
		return -1;
	if (self->ctx) {
		PyErr_SetString(PyExc_RuntimeError, "Context already initialised");
		return -1;
	}
	pthread_mutex_init(&self->lock, NULL);
	atomic_init(&self->stop, false);
	struct in_addr a;
	if (inet_pton(AF_INET, ip, &a) != 1) {
		raise_msg(EINVAL, "'%s' is not an IPv4 address (%s)", ip);
		return -1;
	}
	memcpy(self->ip, &a, 4);
	int r;
	Py_BEGIN_ALLOW_THREADS
	r = droce_dpdk_init(eal);
	Py_END_ALLOW_THREADS
	if (r) {
		raise_msg(r, "EAL start failed (%s): %s", eal ? eal : "no extra arguments");
		return -1;
	}
	struct droce_dpdk_port_conf pc = {.spec = spec, .ip_version = 4, .link_wait_ns = LINK_WAIT_NS};
	memcpy(pc.ip, self->ip, 4);
	Py_BEGIN_ALLOW_THREADS
	self->port = droce_dpdk_port_open(&pc);
	r = self->port ? 0 : errno;
	Py_END_ALLOW_THREADS
	if (!self->port) {
		raise_msg(r, "port '%s': %s", spec);
		return -1;
	}
	if (!droce_dpdk_port_up(self->port))
		PyErr_WarnEx(PyExc_RuntimeWarning, "droce: the port's link is still down", 1);
	struct droce_ctx_params p;
	droce_ctx_params_init(&p);
	p.ip_version = 4;
	memcpy(p.ip, self->ip, 4);
	droce_dpdk_port_mac(self->port, p.mac);
	p.link = droce_dpdk_port_link(self->port);
	p.seed = droce_dpdk_now();
	p.cc = cc;
	self->mtu = droce_dpdk_port_roce_mtu(self->port);
	self->ctx = droce_ctx_create(&p);
	if (!self->ctx) {
		raise_msg(errno, "context: %s%s", cc ? " (is cc a known algorithm?)" : "");
		droce_dpdk_port_close(self->port);
		self->port = NULL;
		return -1;
	}
	struct droce_cm_conf cm;
	droce_cm_conf_init(&cm);
	cm.resolve = droce_dpdk_port_resolve;
	cm.resolve_arg = self->port;
	r = droce_cm_open(self->ctx, &cm);
	if (r) {
		raise_errno(r, "cannot start the connection manager");
		return -1;
	}
	if (progress) {
		if (pthread_create(&self->progress, NULL, progress_main, self)) {
			raise_errno(EAGAIN, "cannot start the progress thread");
			return -1;
		}
		self->has_progress = true;
	}
	return 0;
}

static void ctx_close_(Ctx *self)
{
	if (self->has_progress) {
		atomic_store(&self->stop, true);
		Py_BEGIN_ALLOW_THREADS
		pthread_join(self->progress, NULL);
		Py_END_ALLOW_THREADS
		self->has_progress = false;
	}
	if (self->ctx) {
		/* the frames still batched leave, then a moment of silence before
		 * the port goes (a memif peer may still be answering) */
		Py_BEGIN_ALLOW_THREADS
		uint64_t end = droce_dpdk_now() + 100000000ull;
		while (droce_dpdk_port_tx_pending(self->port) && droce_dpdk_now() < end)
			droce_ctx_poll(self->ctx, droce_dpdk_now());
		droce_ctx_destroy(self->ctx);
		/* silent a moment before the port goes: a memif peer still
		 * polling when this side leaves can crash (docs/usage.md) */
		nap(100000000L);
		droce_dpdk_port_close(self->port);
		Py_END_ALLOW_THREADS
		self->ctx = NULL;
		self->port = NULL;
	}
}

static bool ctx_ok(Ctx *c)
{
	if (c && c->ctx)
		return true;
	PyErr_SetString(PyExc_ValueError, "the context is closed");
	return false;
}

static PyObject *ctx_close(Ctx *self, PyObject *unused)
{
	ctx_close_(self);
	Py_RETURN_NONE;
}

static void ctx_dealloc(Ctx *self)
{
	ctx_close_(self);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ctx_poll(Ctx *self, PyObject *unused)
{
	if (!ctx_ok(self))
		return NULL;
	unsigned n;
	lock(self);
	n = poll_locked(self);
	unlock(self);
	return PyLong_FromUnsignedLong(n);
}

static PyObject *ctx_listen(Ctx *self, PyObject *args)
{
	int port;
	if (!PyArg_ParseTuple(args, "i", &port) || !ctx_ok(self))
		return NULL;
	if (port < 0 || port > 65535)
		return raise_errno(EINVAL, "port out of range");
	lock(self);
	int id = droce_listen(self->ctx, (uint16_t)port);
	unlock(self);
	if (id < 0)
		return raise_errno(id, "listen failed");
	return PyLong_FromLong(id);
}

static PyObject *ctx_unlisten(Ctx *self, PyObject *args)
{
	int id;
	if (!PyArg_ParseTuple(args, "i", &id) || !ctx_ok(self))
		return NULL;
	lock(self);
	int r = droce_unlisten(self->ctx, id);
	unlock(self);
	if (r)
		return raise_errno(r, "unlisten failed");
	Py_RETURN_NONE;
}

static PyObject *ctx_stats(Ctx *self, PyObject *unused)
{
	if (!ctx_ok(self))
		return NULL;
	struct droce_ctx_stats s;
	lock(self);
	droce_ctx_get_stats(self->ctx, &s);
	unlock(self);
	PyObject *d = Py_BuildValue("{sKsKsK}", "rx_frames", (unsigned long long)s.rx_frames,
				    "tx_frames", (unsigned long long)s.tx_frames, "tx_busy",
				    (unsigned long long)s.tx_busy);
	if (!d)
		return NULL;
	PyObject *drops = PyDict_New();
	for (unsigned i = 0; drops && i < DROCE_DROP_REASON_MAX; i++) {
		const char *name = droce_drop_reason_name(i);
		if (!name)
			break;
		if (s.drop[i]) {
			PyObject *v = PyLong_FromUnsignedLongLong(s.drop[i]);
			PyDict_SetItemString(drops, name, v);
			Py_XDECREF(v);
		}
	}
	if (drops) {
		PyDict_SetItemString(d, "drops", drops);
		Py_DECREF(drops);
	}
	return d;
}

/* A new region object, not yet registered; @p owner (may be NULL) is held. */
static MR *mr_new(PyObject *owner)
{
	MR *m = PyObject_New(MR, &MRType);
	if (!m)
		return NULL;
	m->mr = NULL;
	m->has_view = false;
	m->ctx = NULL;
	Py_XINCREF(owner);
	m->owner = owner;
	return m;
}

/* Register @p m's memory on @p self; the region then holds the context. */
static PyObject *mr_register(Ctx *self, MR *m, void *addr, size_t len, unsigned access)
{
	lock(self);
	m->mr = droce_reg_mr(self->ctx, addr, len, access);
	int e = errno;
	unlock(self);
	if (!m->mr) {
		Py_DECREF(m);
		return raise_errno(e, "register_memory failed");
	}
	Py_INCREF(self);
	m->ctx = self;
	return (PyObject *)m;
}

static PyObject *ctx_register(Ctx *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"obj", "access", NULL};
	PyObject *obj;
	int access = -1;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i", kwlist, &obj, &access) || !ctx_ok(self))
		return NULL;
	MR *m = mr_new(NULL);
	if (!m)
		return NULL;
	int flags = PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE;
	if (PyObject_GetBuffer(obj, &m->view, flags)) {
		/* read-only memory (bytes) can still be sent from */
		PyErr_Clear();
		if (PyObject_GetBuffer(obj, &m->view, PyBUF_ANY_CONTIGUOUS)) {
			Py_DECREF(m);
			return NULL;
		}
		if (access < 0)
			access = 0;
		else if (access & DROCE_ACCESS_LOCAL_WRITE) {
			PyBuffer_Release(&m->view);
			Py_DECREF(m);
			return raise_errno(EACCES, "read-only memory cannot take writes");
		}
	}
	m->has_view = true;
	if (access < 0)
		access = ACCESS_ALL;
	return mr_register(self, m, m->view.buf, (size_t)m->view.len, (unsigned)access);
}

static PyObject *ctx_register_raw(Ctx *self, PyObject *args)
{
	unsigned long long addr;
	Py_ssize_t len;
	PyObject *owner;
	int access = ACCESS_ALL;
	if (!PyArg_ParseTuple(args, "KnO|i", &addr, &len, &owner, &access) || !ctx_ok(self))
		return NULL;
	if (len < 0 || (!addr && len))
		return raise_errno(EINVAL, "bad address or length");
	MR *m = mr_new(owner);
	if (!m)
		return NULL;
	return mr_register(self, m, (void *)(uintptr_t)addr, (size_t)len, (unsigned)access);
}

static PyObject *ctx_create_qp(Ctx *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {"qp_type", "max_send_wr", "max_recv_wr", "cq_depth", NULL};
	int type = DROCE_QPT_RC;
	unsigned sw = DROCE_DEFAULT_MAX_SEND_WR, rw = DROCE_DEFAULT_MAX_RECV_WR, depth = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|iIII", kwlist, &type, &sw, &rw, &depth) ||
	    !ctx_ok(self))
		return NULL;
	if (type != DROCE_QPT_RC)
		return raise_errno(EOPNOTSUPP, "only RC QPs (QP_TYPE_RC) are offered here");
	QP *q = PyObject_New(QP, &QPType);
	if (!q)
		return NULL;
	q->qp = NULL;
	q->cq = NULL;
	q->ctx = NULL;
	q->conn = -1;
	q->connected = false;
	q->peer_pd = NULL;
	lock(self);
	q->cq = droce_create_cq(self->ctx, depth ? depth : sw + rw);
	struct droce_qp_init_attr ia = {.send_cq = q->cq, .recv_cq = q->cq, .qp_type = DROCE_QPT_RC,
					.cap = {.max_send_wr = sw, .max_recv_wr = rw}};
	q->qp = q->cq ? droce_create_qp(self->ctx, &ia) : NULL;
	int e = errno, r = 0;
	if (q->qp) {
		/* INIT now, so that receives can be posted before connect/accept */
		struct droce_qp_attr a = {.qp_state = DROCE_QPS_INIT, .pkey = DROCE_DEFAULT_PKEY,
					  .qp_access_flags = DROCE_ACCESS_REMOTE_WRITE |
							     DROCE_ACCESS_REMOTE_READ |
							     DROCE_ACCESS_REMOTE_ATOMIC};
		r = droce_modify_qp(q->qp, &a, DROCE_QP_STATE | DROCE_QP_PKEY | DROCE_QP_ACCESS_FLAGS);
	}
	unlock(self);
	Py_INCREF(self);
	q->ctx = self;
	if (!q->qp || r) {
		Py_DECREF(q);
		return raise_errno(r ? r : e, "create_qp failed");
	}
	return (PyObject *)q;
}

struct accept_wait {
	int listen_id;
	struct droce_conn_event ev;
};

static bool match_request(const struct droce_conn_event *ev, int id)
{
	return ev->type == DROCE_CONN_REQUEST && ev->listen_id == id;
}

static bool request_ready(Ctx *c, void *arg)
{
	struct accept_wait *w = arg;
	return take_event(c, match_request, w->listen_id, &w->ev);
}

static bool match_conn(const struct droce_conn_event *ev, int id)
{
	return ev->conn == id && ev->type != DROCE_CONN_REQUEST;
}

struct conn_wait {
	int conn;
	struct droce_conn_event ev;
};

static bool conn_ready(Ctx *c, void *arg)
{
	struct conn_wait *w = arg;
	return take_event(c, match_conn, w->conn, &w->ev);
}

static PyObject *conn_outcome(QP *q, const struct droce_conn_event *ev)
{
	switch (ev->type) {
	case DROCE_CONN_ESTABLISHED:
		q->connected = true;
		Py_RETURN_NONE;
	case DROCE_CONN_REJECTED: {
		char b[96];
		snprintf(b, sizeof(b), "connection rejected (reason %d)", ev->status);
		return raise_errno(ECONNREFUSED, b);
	}
	case DROCE_CONN_TIMEOUT:
		return raise_errno(ETIMEDOUT, "connection timed out (no answer to the CM)");
	case DROCE_CONN_UNREACHABLE:
		return raise_errno(EHOSTUNREACH, "peer unreachable (ARP)");
	default: {
		char b[96];
		snprintf(b, sizeof(b), "connection failed: %s (%d)", droce_conn_event_str(ev->type),
			 ev->status);
		return raise_errno(ev->status ? ev->status : EIO, b);
	}
	}
}

static PyObject *pd_bytes(const struct droce_conn_event *ev)
{
	return PyBytes_FromStringAndSize((const char *)ev->private_data,
					 (Py_ssize_t)ev->private_data_len);
}

static PyObject *ctx_accept(Ctx *self, PyObject *args)
{
	int listen_id;
	QP *q;
	double timeout = -1;
	Py_buffer pd = {0};
	if (!PyArg_ParseTuple(args, "iO!|dy*", &listen_id, &QPType, &q, &timeout, &pd) ||
	    !ctx_ok(self))
		return NULL;
	struct accept_wait w = {.listen_id = listen_id};
	int got = wait_for(self, request_ready, &w, timeout);
	if (got <= 0) {
		PyBuffer_Release(&pd);
		return got < 0 ? NULL : raise_errno(ETIMEDOUT, "no connection request in time");
	}
	struct droce_conn_param cp;
	droce_conn_param_init(&cp);
	cp.private_data = pd.buf;
	cp.private_data_len = pd.buf ? (size_t)pd.len : 0;
	lock(self);
	int r = droce_accept(self->ctx, w.ev.conn, q->qp, &cp, droce_dpdk_now());
	unlock(self);
	PyBuffer_Release(&pd);
	if (r)
		return raise_errno(r, "accept failed");
	q->conn = w.ev.conn;
	Py_XDECREF(q->peer_pd);
	q->peer_pd = pd_bytes(&w.ev);
	struct conn_wait cw = {.conn = w.ev.conn};
	got = wait_for(self, conn_ready, &cw, timeout);
	if (got <= 0)
		return got < 0 ? NULL : raise_errno(ETIMEDOUT, "no RTU from the peer in time");
	PyObject *res = conn_outcome(q, &cw.ev);
	if (!res)
		return NULL;
	Py_DECREF(res);
	char ip[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, w.ev.peer.ip, ip, sizeof(ip));
	return Py_BuildValue("(si)", ip, (int)w.ev.peer.port);
}

static PyMethodDef ctx_methods[] = {
	{"close", (PyCFunction)ctx_close, METH_NOARGS, "Destroy the context and close its port."},
	{"poll", (PyCFunction)ctx_poll, METH_NOARGS, "Run the poll loop once; returns the work done."},
	{"_listen", (PyCFunction)ctx_listen, METH_VARARGS, NULL},
	{"_unlisten", (PyCFunction)ctx_unlisten, METH_VARARGS, NULL},
	{"_accept", (PyCFunction)ctx_accept, METH_VARARGS, NULL},
	{"_register", (PyCFunction)(void (*)(void))ctx_register, METH_VARARGS | METH_KEYWORDS, NULL},
	{"_register_raw", (PyCFunction)ctx_register_raw, METH_VARARGS, NULL},
	{"_create_qp", (PyCFunction)(void (*)(void))ctx_create_qp, METH_VARARGS | METH_KEYWORDS, NULL},
	{"stats", (PyCFunction)ctx_stats, METH_NOARGS, "Context counters and drop reasons."},
	{NULL},
};

static PyObject *ctx_get_mtu(Ctx *self, void *unused)
{
	return PyLong_FromUnsignedLong(self->mtu);
}

static PyGetSetDef ctx_getset[] = {
	{"mtu", (getter)ctx_get_mtu, NULL, "largest RoCE path MTU of the port", NULL},
	{NULL},
};

static PyTypeObject CtxType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "droce._droce.Context",
	.tp_basicsize = sizeof(Ctx),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)ctx_init,
	.tp_dealloc = (destructor)ctx_dealloc,
	.tp_methods = ctx_methods,
	.tp_getset = ctx_getset,
};

/* -------------------------------------------------------------------- MR -- */

static void mr_close_(MR *m)
{
	if (m->mr && m->ctx && m->ctx->ctx) {
		lock(m->ctx);
		droce_dereg_mr(m->mr);
		unlock(m->ctx);
	}
	m->mr = NULL;
	if (m->has_view) {
		PyBuffer_Release(&m->view);
		m->has_view = false;
	}
	Py_CLEAR(m->owner);
}

static PyObject *mr_close(MR *m, PyObject *unused)
{
	mr_close_(m);
	Py_RETURN_NONE;
}

static void mr_dealloc(MR *m)
{
	mr_close_(m);
	Py_CLEAR(m->ctx);
	PyObject_Free(m);
}

static PyObject *mr_get(MR *m, void *which)
{
	if (!m->mr)
		return PyErr_Format(PyExc_ValueError, "the memory region is deregistered");
	switch ((intptr_t)which) {
	case 0: return PyLong_FromUnsignedLongLong((uintptr_t)m->mr->addr);
	case 1: return PyLong_FromSize_t(m->mr->length);
	case 2: return PyLong_FromUnsignedLong(m->mr->lkey);
	case 3: return PyLong_FromUnsignedLong(m->mr->rkey);
	default: return PyLong_FromUnsignedLong(m->mr->access);
	}
}

static PyObject *mr_get_obj(MR *m, void *unused)
{
	PyObject *o = m->owner ? m->owner : m->has_view ? m->view.obj : Py_None;
	Py_INCREF(o);
	return o;
}

static PyGetSetDef mr_getset[] = {
	{"addr", (getter)mr_get, NULL, "start address (what a peer's RDMA names)", (void *)0},
	{"length", (getter)mr_get, NULL, "bytes registered", (void *)1},
	{"lkey", (getter)mr_get, NULL, "local key", (void *)2},
	{"rkey", (getter)mr_get, NULL, "remote key (give it to the peer)", (void *)3},
	{"access", (getter)mr_get, NULL, "ACCESS_* flags", (void *)4},
	{"obj", (getter)mr_get_obj, NULL, "the registered object", NULL},
	{NULL},
};

static PyMethodDef mr_methods[] = {
	{"close", (PyCFunction)mr_close, METH_NOARGS,
	 "Deregister: the rkey stops working and the object is released."},
	{NULL},
};

static PyTypeObject MRType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "droce._droce.MemoryRegion",
	.tp_basicsize = sizeof(MR),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_dealloc = (destructor)mr_dealloc,
	.tp_methods = mr_methods,
	.tp_getset = mr_getset,
};

/* -------------------------------------------------------------------- QP -- */

static bool qp_ok(QP *q)
{
	if (q->qp && q->ctx && q->ctx->ctx)
		return true;
	PyErr_SetString(PyExc_ValueError, "the QP is closed");
	return false;
}

static void qp_close_(QP *q)
{
	if (q->ctx && q->ctx->ctx) {
		lock(q->ctx);
		if (q->qp)
			droce_destroy_qp(q->qp);
		if (q->cq)
			droce_destroy_cq(q->cq);
		unlock(q->ctx);
	}
	q->qp = NULL;
	q->cq = NULL;
}

static PyObject *qp_close(QP *q, PyObject *unused)
{
	qp_close_(q);
	Py_RETURN_NONE;
}

static void qp_dealloc(QP *q)
{
	qp_close_(q);
	Py_CLEAR(q->peer_pd);
	Py_CLEAR(q->ctx);
	PyObject_Free(q);
}

static PyObject *qp_connect(QP *q, PyObject *args)
{
	const char *ip;
	int port;
	double timeout = -1;
	Py_buffer pd = {0};
	if (!PyArg_ParseTuple(args, "si|dy*", &ip, &port, &timeout, &pd) || !qp_ok(q))
		return NULL;
	struct droce_addr dst = {.ip_version = 4, .port = (uint16_t)port};
	if (inet_pton(AF_INET, ip, dst.ip) != 1 || port < 0 || port > 65535) {
		PyBuffer_Release(&pd);
		return raise_errno(EINVAL, "bad address");
	}
	struct droce_conn_param cp;
	droce_conn_param_init(&cp);
	cp.private_data = pd.buf;
	cp.private_data_len = pd.buf ? (size_t)pd.len : 0;
	Ctx *c = q->ctx;
	lock(c);
	int conn = droce_connect(q->qp, &dst, &cp, droce_dpdk_now());
	unlock(c);
	PyBuffer_Release(&pd);
	if (conn < 0)
		return raise_errno(conn, "connect failed");
	q->conn = conn;
	struct conn_wait w = {.conn = conn};
	int got = wait_for(c, conn_ready, &w, timeout);
	if (got <= 0)
		return got < 0 ? NULL : raise_errno(ETIMEDOUT, "not connected in time");
	PyObject *r = conn_outcome(q, &w.ev);
	if (r) {
		Py_XDECREF(q->peer_pd);
		q->peer_pd = pd_bytes(&w.ev);
	}
	return r;
}

static bool disc_ready(Ctx *c, void *arg)
{
	struct conn_wait *w = arg;
	for (unsigned i = 0; i < c->nev; i++)
		if (c->ev[i].conn == w->conn && c->ev[i].type == DROCE_CONN_DISCONNECTED)
			return take_event(c, match_conn, w->conn, &w->ev);
	return false;
}

static PyObject *qp_disconnect(QP *q, PyObject *args)
{
	double timeout = 5;
	if (!PyArg_ParseTuple(args, "|d", &timeout) || !qp_ok(q))
		return NULL;
	if (q->conn < 0)
		return raise_errno(ENOTCONN, "not connected");
	lock(q->ctx);
	int r = droce_disconnect(q->ctx->ctx, q->conn, droce_dpdk_now());
	unlock(q->ctx);
	q->connected = false;
	if (r && r != -EBADFD)
		return raise_errno(r, "disconnect failed");
	struct conn_wait w = {.conn = q->conn};
	int got = r ? 1 : wait_for(q->ctx, disc_ready, &w, timeout);
	q->conn = -1;
	if (got < 0)
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *qp_wait_disconnect(QP *q, PyObject *args)
{
	double timeout = -1;
	if (!PyArg_ParseTuple(args, "|d", &timeout) || !qp_ok(q))
		return NULL;
	if (q->conn < 0)
		Py_RETURN_NONE;
	struct conn_wait w = {.conn = q->conn};
	int got = wait_for(q->ctx, disc_ready, &w, timeout);
	if (got < 0)
		return NULL;
	if (!got) {
		PyErr_SetString(PyExc_TimeoutError, "the peer did not disconnect in time");
		return NULL;
	}
	q->connected = false;
	q->conn = -1;
	Py_RETURN_NONE;
}

static int sge_of(MR *m, Py_ssize_t off, Py_ssize_t len, struct droce_sge *sge)
{
	if (!m->mr) {
		PyErr_SetString(PyExc_ValueError, "the memory region is deregistered");
		return -1;
	}
	Py_ssize_t size = (Py_ssize_t)m->mr->length;
	if (len < 0)
		len = size - off;
	if (off < 0 || len < 0 || off + len > size || len > UINT32_MAX) {
		PyErr_Format(PyExc_ValueError, "offset %zd + length %zd outside the %zd-byte region", off,
			     len, size);
		return -1;
	}
	sge->addr = (uintptr_t)m->mr->addr + (uint64_t)off;
	sge->length = (uint32_t)len;
	sge->lkey = m->mr->lkey;
	return 0;
}

/* post(opcode, mr, offset, length, wr_id, imm, remote_addr, rkey, signaled) */
static PyObject *qp_post_send(QP *q, PyObject *args)
{
	int opcode, signaled = 1;
	MR *m;
	Py_ssize_t off = 0, len = -1;
	unsigned long long wr_id = 0, raddr = 0;
	PyObject *imm = Py_None;
	unsigned rkey = 0;
	if (!PyArg_ParseTuple(args, "iO!nnKOKIp", &opcode, &MRType, &m, &off, &len, &wr_id, &imm, &raddr,
			      &rkey, &signaled) ||
	    !qp_ok(q))
		return NULL;
	struct droce_sge sge;
	if (sge_of(m, off, len, &sge))
		return NULL;
	struct droce_send_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = sge.length ? 1 : 0,
				   .opcode = opcode,
				   .send_flags = signaled ? DROCE_SEND_SIGNALED : 0};
	if (imm != Py_None) {
		unsigned long v = PyLong_AsUnsignedLong(imm);
		if (PyErr_Occurred() || v > UINT32_MAX)
			return PyErr_Occurred() ? NULL : raise_errno(EINVAL, "imm is 32 bits");
		/* the value travels as given; the receiver reads it back unchanged */
		wr.imm_data = htonl((uint32_t)v);
	}
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	struct droce_send_wr *bad;
	lock(q->ctx);
	int r = droce_post_send(q->qp, &wr, &bad);
	unlock(q->ctx);
	if (r)
		return raise_errno(r, "post_send failed");
	Py_RETURN_NONE;
}

static PyObject *qp_post_recv(QP *q, PyObject *args)
{
	MR *m;
	Py_ssize_t off = 0, len = -1;
	unsigned long long wr_id = 0;
	if (!PyArg_ParseTuple(args, "O!nnK", &MRType, &m, &off, &len, &wr_id) || !qp_ok(q))
		return NULL;
	struct droce_sge sge;
	if (sge_of(m, off, len, &sge))
		return NULL;
	struct droce_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;
	lock(q->ctx);
	int r = droce_post_recv(q->qp, &wr, &bad);
	unlock(q->ctx);
	if (r)
		return raise_errno(r, "post_recv failed");
	Py_RETURN_NONE;
}

struct cq_wait {
	struct droce_cq *cq;
	struct droce_wc wc;
	int n;
};

static bool cq_ready(Ctx *c, void *arg)
{
	struct cq_wait *w = arg;
	w->n = droce_poll_cq(w->cq, 1, &w->wc);
	return w->n != 0;
}

static PyObject *completion_of(const struct droce_wc *wc)
{
	PyObject *c = PyStructSequence_New(&CompletionType);
	if (!c)
		return NULL;
	PyObject *imm;
	if (wc->wc_flags & DROCE_WC_WITH_IMM) {
		imm = PyLong_FromUnsignedLong(ntohl(wc->imm_data));
	} else {
		imm = Py_None;
		Py_INCREF(imm);
	}
	PyStructSequence_SET_ITEM(c, 0, PyLong_FromUnsignedLongLong(wc->wr_id));
	PyStructSequence_SET_ITEM(c, 1, PyLong_FromLong(wc->status));
	PyStructSequence_SET_ITEM(c, 2, PyUnicode_FromString(droce_wc_status_str(wc->status)));
	PyStructSequence_SET_ITEM(c, 3, PyLong_FromLong(wc->opcode));
	PyStructSequence_SET_ITEM(c, 4, PyLong_FromUnsignedLong(wc->byte_len));
	PyStructSequence_SET_ITEM(c, 5, imm);
	PyStructSequence_SET_ITEM(c, 6, PyLong_FromUnsignedLong(wc->qp_num));
	PyStructSequence_SET_ITEM(c, 7, PyLong_FromUnsignedLong(wc->vendor_err));
	return c;
}

static PyObject *qp_poll_completion(QP *q, PyObject *args)
{
	double timeout = -1;
	int check = 1;
	if (!PyArg_ParseTuple(args, "|dp", &timeout, &check) || !qp_ok(q))
		return NULL;
	struct cq_wait w = {.cq = q->cq};
	int got = wait_for(q->ctx, cq_ready, &w, timeout);
	if (got < 0)
		return NULL;
	if (!got) {
		PyErr_SetString(PyExc_TimeoutError, "no completion in time");
		return NULL;
	}
	if (w.n < 0)
		return raise_errno(EOVERFLOW, "the completion queue overflowed");
	PyObject *c = completion_of(&w.wc);
	if (c && check && w.wc.status != DROCE_WC_SUCCESS) {
		char b[128];
		snprintf(b, sizeof(b), "work request %llu failed: %s", (unsigned long long)w.wc.wr_id,
			 droce_wc_status_str(w.wc.status));
		/* an OSError (errno = the status) with .status and .completion */
		PyObject *e = PyObject_CallFunction(CompletionError, "is", (int)w.wc.status, b);
		if (e) {
			PyObject *st = PyLong_FromLong(w.wc.status);
			PyObject_SetAttrString(e, "status", st);
			Py_XDECREF(st);
			PyObject_SetAttrString(e, "completion", c);
			PyErr_SetObject(CompletionError, e);
			Py_DECREF(e);
		}
		Py_DECREF(c);
		return NULL;
	}
	return c;
}

static PyObject *qp_get_num(QP *q, void *unused)
{
	return q->qp ? PyLong_FromUnsignedLong(droce_qp_num(q->qp)) : PyLong_FromLong(-1);
}

static PyObject *qp_get_connected(QP *q, void *unused)
{
	return PyBool_FromLong(q->connected);
}

static PyObject *qp_get_pd(QP *q, void *unused)
{
	PyObject *o = q->peer_pd ? q->peer_pd : Py_None;
	Py_INCREF(o);
	return o;
}

static PyObject *qp_get_state(QP *q, void *unused)
{
	if (!qp_ok(q))
		return NULL;
	struct droce_qp_attr a;
	lock(q->ctx);
	droce_query_qp(q->qp, &a, 0);
	unlock(q->ctx);
	return PyUnicode_FromString(droce_qp_state_str(a.qp_state));
}

static PyGetSetDef qp_getset[] = {
	{"num", (getter)qp_get_num, NULL, "the QP number", NULL},
	{"connected", (getter)qp_get_connected, NULL, "established and not disconnected", NULL},
	{"peer_private_data", (getter)qp_get_pd, NULL, "what the peer sent with its REQ or REP",
	 NULL},
	{"state", (getter)qp_get_state, NULL, "IBTA QP state: RESET, INIT, RTR, RTS, ERR ...", NULL},
	{NULL},
};

static PyMethodDef qp_methods[] = {
	{"close", (PyCFunction)qp_close, METH_NOARGS, "Destroy the QP and its CQ."},
	{"_connect", (PyCFunction)qp_connect, METH_VARARGS, NULL},
	{"_disconnect", (PyCFunction)qp_disconnect, METH_VARARGS, NULL},
	{"_wait_disconnect", (PyCFunction)qp_wait_disconnect, METH_VARARGS, NULL},
	{"_post_send", (PyCFunction)qp_post_send, METH_VARARGS, NULL},
	{"_post_recv", (PyCFunction)qp_post_recv, METH_VARARGS, NULL},
	{"_poll_completion", (PyCFunction)qp_poll_completion, METH_VARARGS, NULL},
	{NULL},
};

static PyTypeObject QPType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "droce._droce.QP",
	.tp_basicsize = sizeof(QP),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_dealloc = (destructor)qp_dealloc,
	.tp_methods = qp_methods,
	.tp_getset = qp_getset,
};

/* ---------------------------------------------------------------- module -- */

static PyStructSequence_Field completion_fields[] = {
	{"wr_id", "the work request's id"},
	{"status", "0 (WC_SUCCESS) or an ibverbs-numbered error status"},
	{"status_str", "the status in words"},
	{"opcode", "WC_SEND, WC_RDMA_WRITE, WC_RDMA_READ, WC_RECV, WC_RECV_RDMA_WITH_IMM ..."},
	{"byte_len", "bytes received (receive completions)"},
	{"imm", "the immediate (a 32-bit int), or None"},
	{"qp_num", "the QP it belongs to"},
	{"vendor_err", "droce's detail (e.g. the NAK code received)"},
	{NULL},
};

static PyStructSequence_Desc completion_desc = {
	"droce.Completion", "A work completion.", completion_fields, 8,
};

static struct PyModuleDef moddef = {
	.m_base = PyModuleDef_HEAD_INIT,
	.m_name = "_droce",
	.m_doc = "droce's C extension (use the droce package).",
	.m_size = -1,
};

PyMODINIT_FUNC PyInit__droce(void)
{
	if (PyType_Ready(&CtxType) < 0 || PyType_Ready(&MRType) < 0 || PyType_Ready(&QPType) < 0)
		return NULL;
	if (PyStructSequence_InitType2(&CompletionType, &completion_desc) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&moddef);
	if (!m)
		return NULL;
	Error = PyErr_NewExceptionWithDoc("droce.Error",
					  "A droce call failed: errno and strerror as OSError's.",
					  PyExc_OSError, NULL);
	CompletionError = PyErr_NewExceptionWithDoc(
		"droce.CompletionError",
		"A work request completed with an error: .status, .completion (and errno = status).",
		Error, NULL);
	Py_INCREF(&CtxType);
	Py_INCREF(&MRType);
	Py_INCREF(&QPType);
	Py_INCREF(&CompletionType);
	if (PyModule_AddObject(m, "Context", (PyObject *)&CtxType) ||
	    PyModule_AddObject(m, "MemoryRegion", (PyObject *)&MRType) ||
	    PyModule_AddObject(m, "QP", (PyObject *)&QPType) ||
	    PyModule_AddObject(m, "Completion", (PyObject *)&CompletionType) ||
	    PyModule_AddObject(m, "Error", Error) ||
	    PyModule_AddObject(m, "CompletionError", CompletionError))
		return NULL;
	struct {
		const char *name;
		long v;
	} consts[] = {
		{"QP_TYPE_RC", DROCE_QPT_RC},
		{"WR_RDMA_WRITE", DROCE_WR_RDMA_WRITE},
		{"WR_RDMA_WRITE_WITH_IMM", DROCE_WR_RDMA_WRITE_WITH_IMM},
		{"WR_SEND", DROCE_WR_SEND},
		{"WR_SEND_WITH_IMM", DROCE_WR_SEND_WITH_IMM},
		{"WR_RDMA_READ", DROCE_WR_RDMA_READ},
		{"WC_SUCCESS", DROCE_WC_SUCCESS},
		{"WC_SEND", DROCE_WC_SEND},
		{"WC_RDMA_WRITE", DROCE_WC_RDMA_WRITE},
		{"WC_RDMA_READ", DROCE_WC_RDMA_READ},
		{"WC_RECV", DROCE_WC_RECV},
		{"WC_RECV_RDMA_WITH_IMM", DROCE_WC_RECV_RDMA_WITH_IMM},
		{"WC_WR_FLUSH_ERR", DROCE_WC_WR_FLUSH_ERR},
		{"WC_REM_ACCESS_ERR", DROCE_WC_REM_ACCESS_ERR},
		{"WC_LOC_PROT_ERR", DROCE_WC_LOC_PROT_ERR},
		{"WC_LOC_LEN_ERR", DROCE_WC_LOC_LEN_ERR},
		{"WC_RETRY_EXC_ERR", DROCE_WC_RETRY_EXC_ERR},
		{"ACCESS_LOCAL_WRITE", DROCE_ACCESS_LOCAL_WRITE},
		{"ACCESS_REMOTE_WRITE", DROCE_ACCESS_REMOTE_WRITE},
		{"ACCESS_REMOTE_READ", DROCE_ACCESS_REMOTE_READ},
		{"ACCESS_REMOTE_ATOMIC", DROCE_ACCESS_REMOTE_ATOMIC},
	};
	for (size_t i = 0; i < sizeof(consts) / sizeof(consts[0]); i++)
		if (PyModule_AddIntConstant(m, consts[i].name, consts[i].v))
			return NULL;
	return m;
}
