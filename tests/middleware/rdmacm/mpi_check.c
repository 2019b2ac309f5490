/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * suite middleware: an MPI program of ours for two ranks (mpi_ofi.sh runs
 * it under Open MPI over droce): a ping-pong of 8 B .. 4 MB (rank 1
 * checks what it got and answers with another pattern, which rank 0
 * checks) and MPI_Allreduce (MPI_SUM of int32) of 1 KB .. 16 MB, every
 * element checked on every rank.
 *   mpi_check
 * Rank 0 prints "mpi_check: ok" and every rank exits 0, or a rank names
 * what differed and calls MPI_Abort.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static int rank, size;

static void bad(const char *what, size_t n, size_t at)
{
	fprintf(stderr, "mpi_check: rank %d: %s of %zu bytes differs at %zu\n", rank, what, n, at);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint8_t pat(size_t i, unsigned seed)
{
	return (uint8_t)(i * 131u + seed * 17u + (i >> 12));
}

static void pingpong(uint8_t *buf, size_t n, unsigned seed)
{
	if (rank == 0) {
		for (size_t i = 0; i < n; i++)
			buf[i] = pat(i, seed);
		MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
		memset(buf, 0, n);
		MPI_Recv(buf, (int)n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (size_t i = 0; i < n; i++)
			if (buf[i] != pat(i, seed + 1))
				bad("the pong", n, i);
	} else if (rank == 1) {
		memset(buf, 0, n);
		MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (size_t i = 0; i < n; i++)
			if (buf[i] != pat(i, seed))
				bad("the ping", n, i);
		for (size_t i = 0; i < n; i++)
			buf[i] = pat(i, seed + 1);
		MPI_Send(buf, (int)n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
	}
}

static void allreduce(int32_t *in, int32_t *out, size_t bytes, int round)
{
	size_t n = bytes / sizeof(int32_t);
	for (size_t i = 0; i < n; i++)
		in[i] = (int32_t)((i % 100003) * (size_t)(rank + 1) + (size_t)rank + (size_t)round);
	memset(out, 0, bytes);
	MPI_Allreduce(in, out, (int)n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
	/* sum over ranks r of (i * (r + 1) + r + round) */
	int64_t rs = (int64_t)size * (size + 1) / 2, r0 = (int64_t)size * (size - 1) / 2;
	for (size_t i = 0; i < n; i++) {
		int64_t want = (int64_t)(i % 100003) * rs + r0 + (int64_t)size * round;
		if (out[i] != (int32_t)want)
			bad("the allreduce", bytes, i * sizeof(int32_t));
	}
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: wants 2 ranks, has %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	const size_t pp_max = 4u << 20, ar_max = 16u << 20;
	uint8_t *buf = malloc(pp_max);
	int32_t *in = malloc(ar_max), *out = malloc(ar_max);
	if (!buf || !in || !out)
		MPI_Abort(MPI_COMM_WORLD, 3);
	unsigned seed = 1;
	for (size_t n = 8; n <= pp_max; n *= 8) {
		for (int it = 0; it < 5; it++)
			pingpong(buf, n, seed += 2);
		if (rank == 0)
			printf("mpi_check: ping-pong %zu bytes ok\n", n);
	}
	for (int it = 0; it < 5; it++)
		pingpong(buf, pp_max, seed += 2);
	if (rank == 0)
		printf("mpi_check: ping-pong %zu bytes ok\n", pp_max);
	int round = 0;
	for (size_t b = 1024; b <= ar_max; b *= 4) {
		for (int it = 0; it < 3; it++)
			allreduce(in, out, b, round++);
		if (rank == 0)
			printf("mpi_check: allreduce %zu bytes ok\n", b);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: ok\n");
	free(buf);
	free(in);
	free(out);
	MPI_Finalize();
	return 0;
}
