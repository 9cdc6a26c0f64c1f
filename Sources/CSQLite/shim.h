// SQLite 3 from Debian (libsqlite3-dev), for the supporter node's durable store.
// Every sqlite3 call the store makes imports into Swift as a real function; no C shims are needed.
#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H

#include <sqlite3.h>

#endif
