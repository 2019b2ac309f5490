/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two MPI ranks: a ping-pong from 8 B to 4 MB and MPI_Allreduce (sum of
 * uint32) from 1 KB to 16 MB, every byte checked; exits 0 when all match.
 * Run by tests/middleware/mpi.sh with Open MPI over pml ucx on droce0.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t pattern(size_t i, int round, int rank)
{
	return (uint8_t)(i * 131u + (unsigned)round * 7u + (unsigned)rank * 29u);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size, bad = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (!rank)
			fprintf(stderr, "mpi_check: needs 2 ranks, got %d\n", size);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	const size_t max = 16u << 20;
	uint8_t *buf = malloc(max), *out = malloc(max);
	if (!buf || !out)
		MPI_Abort(MPI_COMM_WORLD, 2);
	int round = 0;
	for (size_t len = 8; len <= (4u << 20); len *= 4, round++) {
		int peer = 1 - rank;
		for (int it = 0; it < 4; it++) {
			if (rank == 0) {
				for (size_t i = 0; i < len; i++)
					buf[i] = pattern(i, round + it, 0);
				MPI_Send(buf, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
				MPI_Recv(out, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (size_t i = 0; i < len; i++)
					if (out[i] != pattern(i, round + it, 1)) {
						bad++;
						fprintf(stderr, "ping-pong %zu B: byte %zu differs\n", len, i);
						break;
					}
			} else {
				MPI_Recv(out, (int)len, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (size_t i = 0; i < len; i++)
					if (out[i] != pattern(i, round + it, 0)) {
						bad++;
						fprintf(stderr, "ping-pong %zu B: byte %zu differs\n", len, i);
						break;
					}
				for (size_t i = 0; i < len; i++)
					buf[i] = pattern(i, round + it, 1);
				MPI_Send(buf, (int)len, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
			}
		}
	}
	uint32_t *a = (uint32_t *)buf, *r = (uint32_t *)out;
	for (size_t len = 1024; len <= max; len *= 4) {
		size_t n = len / 4;
		for (size_t i = 0; i < n; i++)
			a[i] = (uint32_t)(i * 2654435761u) + (uint32_t)rank * 17u;
		MPI_Allreduce(a, r, (int)n, MPI_UINT32_T, MPI_SUM, MPI_COMM_WORLD);
		for (size_t i = 0; i < n; i++)
			if (r[i] != (uint32_t)(i * 2654435761u) * 2u + 17u) {
				bad++;
				fprintf(stderr, "allreduce %zu B: element %zu differs\n", len, i);
				break;
			}
	}
	int all = 0;
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_check: ping-pong 8 B..4 MB, allreduce 1 KB..16 MB: %s\n",
		       all ? "MISMATCH" : "all bytes match");
	free(buf);
	free(out);
	MPI_Finalize();
	return all ? 1 : 0;
}
