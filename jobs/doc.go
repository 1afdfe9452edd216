// Package jobs is agentd's job engine: River (github.com/riverqueue/river)
// working the jobs that happen off the request path, on PostgreSQL (on
// SQLite it measured too costly beside the store's single writer; see
// docs/architecture.md). Today it has one kind, "run": whenever a run
// gets a holder (accepted, claimed after a loss, queued again by a
// decision, released by a stopping process) the store schedules a job in
// the same transaction (store.WithRunJobs and Engine.ScheduleRun), due
// when that holder would be lost if nothing renewed the run's beat. Its
// worker asks a Resumer (turn.Service) to take the run over; the process
// that accepted the run normally ends it first, and the job then finds
// nothing to do. While the run's holder is alive the job snoozes until
// the holder's beat could have gone stale.
//
// The package knows River and database/sql, not the database: cmd/agentd
// builds the River driver (riverdatabasesql on PostgreSQL) over a pool of
// its own and hands it to New and Migrate, so no GORM driver is imported
// here. The run row is the lease (its beat), River the executor: a job
// that runs twice, or on two replicas at once, only makes the second
// Resume find the run held or ended.
package jobs
