/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_destroy_id() waits until every event of the id that was handed out
 * has been acked, as rdma-core's does (its man page: ack all related
 * events first; its code blocks until events_completed reaches the
 * events the kernel reported). rping's CM thread handles an event
 * (reading event->id->context) while its main thread destroys that id on
 * the way out: an id freed at once was read after free.
 *
 * One process, a memif port with no peer: rdma_resolve_addr() to our own
 * address gives ADDR_RESOLVED; a second thread destroys the id while this
 * one holds that event. The destroy must not have returned before the ack
 * (checked after 300 ms: a destroy that does not wait returns at once),
 * and returns after it. Then a thread blocked in rdma_get_cm_event while
 * the channel is destroyed: the channel's fd must stay open for it, and a
 * count written to it must not make it return (it read the freed channel:
 * rping's client crashed so at exit, exit 139).
 *   rdmacm_destroy_wait      (exit 0: all held)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

static atomic_int destroyed;

static void *destroyer(void *arg)
{
	rdma_destroy_id(arg);
	atomic_store(&destroyed, 1);
	return NULL;
}

static atomic_int reading, read_returned;

static void *reader(void *arg)
{
	struct rdma_cm_event *ev;
	atomic_store(&reading, 1);
	if (rdma_get_cm_event(arg, &ev) == 0)
		rdma_ack_cm_event(ev);
	atomic_store(&read_returned, 1);
	return NULL;
}

static void nap_ms(int ms)
{
	struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&t, NULL);
}

int main(void)
{
	alarm(60);
	char spec[160];
	snprintf(spec, sizeof(spec), "memif:server,socket=/tmp/droce-destroy-wait-%d.sock", (int)getpid());
	setenv("DROCE_PORT", spec, 1);
	setenv("DROCE_IP", "198.18.0.1", 1);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id = NULL;
	int tag = 42;
	if (!ch || rdma_create_id(ch, &id, &tag, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		return 1;
	}
	struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(7174)};
	inet_pton(AF_INET, "198.18.0.1", &dst.sin_addr);
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000)) {
		perror("rdma_resolve_addr");
		return 1;
	}
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(ch, &ev) || ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
		fprintf(stderr, "destroy_wait: no ADDR_RESOLVED\n");
		return 1;
	}
	pthread_t t;
	pthread_create(&t, NULL, destroyer, id);
	nap_ms(300);
	int fail = 0;
	if (atomic_load(&destroyed)) {
		printf("FAIL: rdma_destroy_id returned while the id's event was not acked\n");
		fail = 1;
	} else {
		printf("ok   rdma_destroy_id waits while the id's ADDR_RESOLVED is held\n");
	}
	/* the handler's read of its context, as rping's CM thread does */
	if (!fail && *(int *)ev->id->context != 42) {
		printf("FAIL: the event's id no longer holds its context\n");
		fail = 1;
	}
	rdma_ack_cm_event(ev);
	pthread_join(t, NULL);
	if (!atomic_load(&destroyed)) {
		printf("FAIL: rdma_destroy_id did not return after the ack\n");
		fail = 1;
	} else {
		printf("ok   rdma_destroy_id returned once the event was acked\n");
	}
	/* A thread inside rdma_get_cm_event while the channel is destroyed
	 * (rping never joins its CM thread): the channel's fd stays open for
	 * it, and woken it returns nothing (it waits on, as on the kernel's
	 * closed ucma fd) instead of reading the freed channel. */
	pthread_t r;
	pthread_create(&r, NULL, reader, ch);
	while (!atomic_load(&reading))
		nap_ms(10);
	nap_ms(100); /* into its read(2) */
	int fd = ch->fd;
	rdma_destroy_event_channel(ch);
	uint64_t one = 1;
	if (write(fd, &one, sizeof(one)) != sizeof(one)) {
		printf("FAIL: the channel's fd was closed under a thread reading it (%s)\n", strerror(errno));
		fail = 1;
	} else {
		nap_ms(300);
		if (atomic_load(&read_returned)) {
			printf("FAIL: rdma_get_cm_event returned on a destroyed channel\n");
			fail = 1;
		} else {
			printf("ok   a reader of a destroyed channel keeps its fd and returns nothing\n");
		}
	}
	printf("%s\n", fail ? "FAIL" : "PASS");
	return fail; /* the reader waits on: exit ends it */
}
