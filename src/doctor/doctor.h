/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/doctor/: moat doctor (what this host gives each layer) and moat selftest's battery
 * of probes against a real sandbox
 */
/* Extra `moat doctor` probes of the layers (cgroups, Landlock rights, nftables). */
#pragma once

#include <jansson.h>
#include <stdio.h>

void moat_doctor_extra(json_t *o);
void moat_doctor_extra_text(FILE *t, json_t *o);
/* The limits layer (doctor_cgroup.c). */
void moat_doctor_cgroup(json_t *o);
void moat_doctor_cgroup_text(FILE *t, json_t *o);
/* The isolation levels that work here, and why not (doctor_isolation.c). */
void moat_doctor_isolation(json_t *o);
void moat_doctor_isolation_text(FILE *t, json_t *o);
