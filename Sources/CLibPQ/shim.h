// libpq, PostgreSQL's client library (Debian libpq-dev), for the PostgreSQL store. Nothing but the one header:
// every libpq call is made from Sources/SupportPostgres.
#include <libpq-fe.h>
#include <poll.h>
