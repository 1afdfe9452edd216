package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"
)

// WithTracing makes each statement run for a traced request or turn a
// client span of its trace: "SELECT agents", with the database system,
// the table and the operation. Statements with no span in their context
// (migrations, the background workers' polls) start none. The SQL, its
// values and the database's error text are never recorded: they may hold
// message text or secrets.
func WithTracing() Option {
	return func(s *Store) { s.tracing = true }
}

// traceDB registers the tracing callbacks on db when the store traces.
func (s *core) traceDB(db *gorm.DB, postgres bool) error {
	if !s.tracing {
		return nil
	}
	system := semconv.DBSystemNameSQLite
	if postgres {
		system = semconv.DBSystemNamePostgreSQL
	}
	s.traceSystem = system
	return db.Use(tracingPlugin{system: system})
}

// statementSpan opens the span of a statement made outside GORM (a
// prepared statement of database/sql), named and attributed as the
// plugin names GORM's: op on table. The returned end records the
// statement's error, if any, and ends it. Nothing is started unless the
// store traces and ctx has a recording span.
func (s *core) statementSpan(ctx context.Context, op, table string) (end func(error)) {
	if !s.tracing || !trace.SpanFromContext(ctx).IsRecording() {
		return func(error) {}
	}
	_, span := tracer().Start(ctx, op+" "+table, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(s.traceSystem, semconv.DBOperationName(op), semconv.DBCollectionName(table)))
	return func(err error) {
		recordError(span, err)
		span.End()
	}
}

// tracer is the store's tracer, looked up at each span (see
// telemetry.Tracer).
func tracer() trace.Tracer { return otel.Tracer("github.com/agentd/agentd/store") }

// recordError marks span failed with err's type, when err is a failure: a
// row not found (GORM's or database/sql's) is an answer.
func recordError(span trace.Span, err error) {
	if err != nil && !errors.Is(err, gorm.ErrRecordNotFound) && !errors.Is(err, sql.ErrNoRows) {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, "")
	}
}

// tracingPlugin is the GORM plugin of WithTracing.
type tracingPlugin struct{ system attribute.KeyValue }

// Name names the plugin for GORM.
func (tracingPlugin) Name() string { return "agentd:tracing" }

// spanKey keys a statement's span among its instance values.
const spanKey = "agentd:span"

// Initialize registers a span's start before, and its end after, the
// statement of every GORM operation.
func (p tracingPlugin) Initialize(db *gorm.DB) error {
	cb := db.Callback()
	return errors.Join(
		cb.Create().Before("gorm:create").Register("agentd:span_create", p.start("INSERT")),
		cb.Create().After("gorm:create").Register("agentd:end_create", p.end),
		cb.Query().Before("gorm:query").Register("agentd:span_query", p.start("SELECT")),
		cb.Query().After("gorm:query").Register("agentd:end_query", p.end),
		cb.Update().Before("gorm:update").Register("agentd:span_update", p.start("UPDATE")),
		cb.Update().After("gorm:update").Register("agentd:end_update", p.end),
		cb.Delete().Before("gorm:delete").Register("agentd:span_delete", p.start("DELETE")),
		cb.Delete().After("gorm:delete").Register("agentd:end_delete", p.end),
		cb.Row().Before("gorm:row").Register("agentd:span_row", p.start("")),
		cb.Row().After("gorm:row").Register("agentd:end_row", p.end),
		cb.Raw().Before("gorm:raw").Register("agentd:span_raw", p.start("")),
		cb.Raw().After("gorm:raw").Register("agentd:end_raw", p.end),
	)
}

// start opens the span of a statement of operation op ("" for raw SQL and
// rows, named from the SQL once it is built), under the span of its
// context; none when the context has no recording span.
func (p tracingPlugin) start(op string) func(*gorm.DB) {
	return func(db *gorm.DB) {
		ctx := db.Statement.Context
		if ctx == nil || !trace.SpanFromContext(ctx).IsRecording() {
			return
		}
		ctx, span := tracer().Start(ctx, "db", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(p.system))
		db.Statement.Context = ctx
		db.InstanceSet(spanKey, span)
		db.InstanceSet(spanKey+":op", op)
	}
}

// end names and ends the statement's span, if it has one.
func (p tracingPlugin) end(db *gorm.DB) {
	v, ok := db.InstanceGet(spanKey)
	if !ok {
		return
	}
	span := v.(trace.Span)
	defer span.End()
	op, _ := db.InstanceGet(spanKey + ":op")
	name := op.(string)
	if name == "" {
		name = firstWord(db.Statement.SQL.String())
	}
	table := db.Statement.Table
	span.SetAttributes(semconv.DBOperationName(name))
	if table != "" {
		span.SetAttributes(semconv.DBCollectionName(table))
		name += " " + table
	}
	span.SetName(name)
	recordError(span, db.Error)
}

// firstWord is the SQL keyword a statement starts with, upper case.
func firstWord(sql string) string {
	sql = strings.TrimSpace(sql)
	if i := strings.IndexAny(sql, " \n\t("); i > 0 {
		sql = sql[:i]
	}
	if sql == "" {
		return "SQL"
	}
	return strings.ToUpper(sql)
}

// errorType names a statement's failure in the store's vocabulary, never
// with the database's text.
func errorType(err error) string {
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return "duplicate_key"
	case errors.Is(err, gorm.ErrForeignKeyViolated):
		return "foreign_key"
	}
	return "db_error"
}

// traceParent is the W3C traceparent of ctx's span, "" when ctx is not
// traced.
func traceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier.Get("traceparent")
}
