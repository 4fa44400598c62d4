/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's schema: one table of numbered migrations, each in both dialects, that drives
 * both backends (store_schema.c). Entry i brings the schema from version i to i + 1; entries
 * are only ever appended, and a shipped entry never changes (a fix is a new migration).
 * test_store_schema checks that every entry has both dialects and that a fresh store on
 * each backend ends with the same tables and columns.
 */
#ifndef MF_SERVER_STORE_SCHEMA_H
#define MF_SERVER_STORE_SCHEMA_H

#define MF_STORE_SCHEMA_LATEST 15 /* the schema version migrate reaches */

struct mf_store_migration {
    int n;              /* the version it brings the schema to */
    const char *sqlite; /* several statements, no parameters */
    const char *pg;
};

/* Sized here so that a table with an entry more or fewer than MF_STORE_SCHEMA_LATEST does
 * not compile. */
extern const struct mf_store_migration mf_store__migrations[MF_STORE_SCHEMA_LATEST];
/* The schema_version table itself (n 0), created before the migrations are read. */
extern const struct mf_store_migration mf_store__schema_table;

#endif /* MF_SERVER_STORE_SCHEMA_H */
