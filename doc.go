/*
Package projectdata is a project-scoped data service on SQLite, for Go
programs: tables, columns, rows, safe read-only SQL, managed indexes, CSV
exports and Project API Tokens. Use it in process through the typed Store,
or over HTTP through the httpapi package, which serves the same operations
with the same rules.

# Storage

Open a Store over a data folder. Every project is a self-contained folder
<dir>/<slug>/ holding one SQLite database (WAL mode) and its exports;
copying the folder moves the project. Control data — the table registry,
column metadata, managed indexes, tokens, export manifests — lives in
tables whose names start with _pd_; application tables are the registered
ones. Within a project writes are serialized on one connection and reads
run in parallel on read-only connections; at most Options.MaxOpenProjects
projects are open at once.

# Errors

Every error wraps exactly one Code (ErrTableNotFound, ErrWhereRequired, …):
errors.Is matches it and ErrorCode returns it (ErrInternal for anything
unexpected). The one exception is the context's own error: a call whose ctx
ends returns ctx.Err() (context.Canceled, context.DeadlineExceeded) as it
is, which wraps no Code. Messages are written for people and name the
table, column, row or value at fault.

Besides the codes its doc comment lists, every operation on a project can
fail with ErrInvalidProjectSlug, ErrProjectNotFound, ErrInvalidToken (the
Caller in ctx belongs to another project), ErrServerBusy (a wait for a
connection past Options.QueueTimeout, or for another process's lock past
Options.BusyTimeout) and ErrStoreClosed (after Close).

# Tokens and roles

CreateProject returns the project's first token, with the admin role.
Authenticate turns a token secret into a Caller; a context made with
WithCaller makes every Store operation check that caller's role (read,
write or admin) against the one table of operations and roles; the
operations on the data folder as a whole (CreateProject, ListProjects,
RestoreProject) refuse a caller. Without a caller in the context, an
operation is the embedding application's own and is trusted.

# Rows

Insert checks every value against its column's type before anything is
written, and a multi-row insert is atomic. GetRecord and DeleteRecord
address a row by its primary key; UpdateRecords and DeleteRecords take a
where clause (values always bound), and need AllowAll — an administrator's
— to touch every row. Numbers keep full int64 precision, JSON included.

# Exports

CreateExport writes a table as CSV under the project's exports/ folder,
from one consistent snapshot, atomically (temporary file, fsync, rename),
and records a manifest whose sha256, size and row count describe the file
exactly. ListExports reconciles manifests with the disk; OpenExport opens a
ready file for download. The export files a project keeps are bounded by
Options.MaxExportBytes (ErrExportQuotaExceeded past it).

# Queries

Query runs one read-only SELECT, WITH … SELECT or EXPLAIN QUERY PLAN
statement against the application tables, sandboxed in depth (the sqlguard
lexer, SQLite's authorizer, SQLite's read-only verdict and a read-only
connection) and bounded by an execution and a result budget.
*/
package projectdata
