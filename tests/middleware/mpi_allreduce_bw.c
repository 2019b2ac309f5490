/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_Allreduce bus bandwidth, every byte checked.
 *
 *   mpirun -np N mpi_allreduce_bw [-n ITERS] [MIN [MAX]]
 *
 * Sums of uint32 from MIN (default 1 KB) to MAX (default 16 MB) bytes,
 * sizes x4. Per size: two warm-up calls, then ITERS timed ones (default
 * 64 MB / size, at least 10, at most 200), each after an MPI_Barrier and
 * into a receive buffer poisoned first; every element of every result is
 * compared with the sum the inputs must give (outside the timed call).
 * Rank 0 prints per size the median time and the bus bandwidth,
 * 2 (n-1)/n x bytes / time (NCCL's convention: what each rank's link
 * carries in a ring), then "all bytes match" or "MISMATCH"; the exit
 * status is 0 only when every element matched on every rank.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t input(size_t i, int rank)
{
	return (uint32_t)(i * 2654435761u) ^ ((uint32_t)rank * 0x9e3779b9u);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank, size, iters = 0, bad = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	size_t lo = 1024, hi = 16u << 20;
	int a = 1;
	if (a + 1 < argc && !strcmp(argv[a], "-n")) {
		iters = atoi(argv[a + 1]);
		a += 2;
	}
	if (a < argc)
		lo = strtoull(argv[a++], NULL, 0);
	if (a < argc)
		hi = strtoull(argv[a++], NULL, 0);
	if (lo < 4 || hi < lo || iters < 0) {
		if (!rank)
			fprintf(stderr, "usage: mpi_allreduce_bw [-n ITERS] [MIN [MAX]]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	size_t maxn = hi / 4;
	uint32_t *in = malloc(maxn * 4), *out = malloc(maxn * 4), *want = malloc(maxn * 4);
	double *t = malloc(200 * sizeof(*t) + (size_t)iters * sizeof(*t));
	if (!in || !out || !want || !t)
		MPI_Abort(MPI_COMM_WORLD, 2);
	if (!rank)
		printf("# mpi_allreduce_bw: %d ranks, uint32 sum, median time, busbw = 2(n-1)/n x bytes / time\n"
		       "%10s %6s %12s %12s\n", size, "bytes", "iters", "time_us", "busbw_GBs");
	for (size_t len = lo; len <= hi; len *= 4) {
		size_t n = len / 4;
		int it = iters;
		if (!it) {
			size_t k = (64u << 20) / len;
			it = k < 10 ? 10 : k > 200 ? 200 : (int)k;
		}
		for (size_t i = 0; i < n; i++) {
			in[i] = input(i, rank);
			uint32_t s = 0;
			for (int r = 0; r < size; r++)
				s += input(i, r);
			want[i] = s;
		}
		for (int k = -2; k < it; k++) {
			memset(out, 0xa5, n * 4);
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = MPI_Wtime();
			MPI_Allreduce(in, out, (int)n, MPI_UINT32_T, MPI_SUM, MPI_COMM_WORLD);
			double dt = MPI_Wtime() - t0;
			if (k >= 0)
				t[k] = dt;
			if (memcmp(out, want, n * 4)) {
				size_t i = 0;
				while (out[i] == want[i])
					i++;
				if (bad++ < 4)
					fprintf(stderr, "rank %d: allreduce %zu B: element %zu is %#x, not %#x\n",
						rank, len, i, out[i], want[i]);
			}
		}
		/* the slowest rank's time is the operation's */
		MPI_Allreduce(MPI_IN_PLACE, t, it, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		qsort(t, (size_t)it, sizeof(*t), cmp_double);
		double med = t[it / 2];
		if (!rank)
			printf("%10zu %6d %12.1f %12.3f\n", len, it, med * 1e6,
			       2.0 * (size - 1) / size * (double)len / med / 1e9);
		fflush(stdout);
		if (len > hi / 4)
			break;
	}
	int all = 0;
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_allreduce_bw: %s\n", all ? "MISMATCH" : "all bytes match");
	free(in);
	free(out);
	free(want);
	free(t);
	MPI_Finalize();
	return all ? 1 : 0;
}
