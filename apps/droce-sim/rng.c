/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The simulator's own random stream (loss, marking, workloads): one
 * splitmix64 per simulation, from --seed, so a seed reproduces a run.
 */
#include "sim.h"

#include "base/splitmix64.h"

uint64_t sim_rand(struct sim *s)
{
	return droce_splitmix64(&s->rng);
}

double sim_uniform(struct sim *s)
{
	return droce_splitmix64_unit(&s->rng);
}
