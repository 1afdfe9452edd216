package store

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/store/storetest/pgtest"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

// migrationBackends runs fn with the name of a fresh, empty database on
// SQLite and on PostgreSQL.
func migrationBackends(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, filepath.Join(t.TempDir(), "agentd.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, pgtest.DSN(t))
	})
}

// rawDB opens the database named by dsn with GORM alone: no migration.
func rawDB(t *testing.T, dsn string) *gorm.DB {
	t.Helper()
	var db *gorm.DB
	var err error
	if isPostgres(dsn) {
		db, err = gorm.Open(postgres.Open(dsn), gormConfig())
	} else {
		db, err = openSQLitePool(withParams(dsn, sqliteWriterParams), 1)
	}
	mustOK(t, err)
	t.Cleanup(func() { _ = closeDB(db) })
	return db
}

// schemaOf describes the tables of db, goose's aside, one sorted line per
// column, index and constraint, in terms that do not depend on the order
// or spelling the tables were created with. The full-text objects (named
// fts_: SQLite's FTS4 tables with their shadow tables, PostgreSQL's stored
// vectors and their GIN indexes) are left out too: the migrations create them by hand
// and no model can express them, so AutoMigrate's schema never has them.
func schemaOf(t *testing.T, db *gorm.DB) []string {
	t.Helper()
	var lines []string
	queries := []string{
		`SELECT table_name || '.' || column_name || ' ' || data_type || ' nullable=' || is_nullable ||
			' default=' || COALESCE(column_default, '') || ' collate=' || COALESCE(collation_name, '')
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name <> 'goose_db_version'
			AND column_name NOT LIKE 'fts\_%'`,
		`SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename <> 'goose_db_version'
			AND indexname NOT LIKE 'fts\_%'`,
		`SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
			WHERE connamespace = current_schema()::regnamespace AND conrelid::regclass::text <> 'goose_db_version'`,
	}
	if db.Dialector.Name() == "sqlite" {
		tables := `(SELECT name AS t FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'goose_db_version'
			AND name NOT LIKE 'fts\_%' ESCAPE '\')`
		queries = []string{
			`SELECT t || '.' || c.name || ' ' || c.type || ' notnull=' || c."notnull" || ' default=' ||
				COALESCE(c.dflt_value, '') || ' pk=' || c.pk FROM ` + tables + `, pragma_table_info(t) c`,
			`SELECT t || ' index ' || CASE WHEN i.origin = 'c' THEN i.name ELSE i.origin END || ' unique=' || i."unique" ||
				' (' || (SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_index_info(i.name) ORDER BY seqno)) || ')'
				FROM ` + tables + `, pragma_index_list(t) i`,
			`SELECT t || ' fk ' || f."from" || ' -> ' || f."table" || '.' || f."to" || ' on delete ' || f.on_delete
				FROM ` + tables + `, pragma_foreign_key_list(t) f`,
		}
	}
	for _, q := range queries {
		var got []string
		mustOK(t, db.Raw(q).Scan(&got).Error)
		lines = append(lines, got...)
	}
	slices.Sort(lines)
	return lines
}

// TestMigrationsMatchModels checks that the migrations create exactly the
// schema GORM derives from the models (which the store's queries are
// written against): the same as AutoMigrate on an empty database, and
// AutoMigrate finds nothing to change.
func TestMigrationsMatchModels(t *testing.T) {
	migrationBackends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		_, err := Migrate(ctx, dsn)
		mustOK(t, err)
		migrated := rawDB(t, dsn)
		got := schemaOf(t, migrated)

		var fresh *gorm.DB
		if isPostgres(dsn) {
			fresh = rawDB(t, pgtest.DSN(t))
		} else {
			fresh = rawDB(t, filepath.Join(t.TempDir(), "fresh.db"))
		}
		mustOK(t, fresh.AutoMigrate(models()...))
		if want := schemaOf(t, fresh); !slices.Equal(got, want) {
			t.Errorf("migrated schema differs from the models':\n%s", lineDiff(got, want))
		}

		mustOK(t, migrated.AutoMigrate(models()...))
		if after := schemaOf(t, migrated); !slices.Equal(got, after) {
			t.Errorf("AutoMigrate changed the migrated schema:\n%s", lineDiff(got, after))
		}
	})
}

// lineDiff lists the lines only in got (-) and only in want (+).
func lineDiff(got, want []string) string {
	var b strings.Builder
	for _, l := range got {
		if !slices.Contains(want, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

// firstReleaseDB makes the database named by dsn as the first release left
// it: its schema (migration 1) without goose's version table, since that
// release created it with AutoMigrate.
func firstReleaseDB(t *testing.T, dsn string) *gorm.DB {
	t.Helper()
	return releaseDB(t, dsn, firstReleaseVersion)
}

// releaseDB makes the database named by dsn as the release with schema
// version left it before versioned migrations: the migrations up to
// version, without goose's version table.
func releaseDB(t *testing.T, dsn string, version int64) *gorm.DB {
	t.Helper()
	ctx := context.Background()
	mustOK(t, withMigrator(ctx, dsn, func(m *migrator) error {
		_, err := m.provider.UpTo(ctx, version)
		return err
	}))
	db := rawDB(t, dsn)
	mustOK(t, db.Exec("DROP TABLE goose_db_version").Error)
	return db
}

// TestMigrateFirstReleaseData migrates a database of the first release with
// data in it and checks that nothing is lost and the derived columns are
// filled: agents with their fields and clients, history, conversations'
// kind, count, last activity and title, who spoke, accounts' agent counts.
func TestMigrateFirstReleaseData(t *testing.T) {
	migrationBackends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		db := firstReleaseDB(t, dsn)
		t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		exec := func(q string, args ...any) { t.Helper(); mustOK(t, db.Exec(q, args...).Error) }
		exec(`INSERT INTO accounts (id, name, tier, rpm, endpoint_multiplier, agent_quota, created_at) VALUES
			('acct_1', 'acme', 'pro', 600, 2, 50, ?), ('acct_2', 'empty', 'free', 60, 1, 5, ?)`, t0, t0)
		exec(`INSERT INTO api_keys (id, account_id, prefix, hash, scope, created_at) VALUES
			('key_1', 'acct_1', 'ak_live_abc', 'hash1', 'write', ?)`, t0)
		agent := `INSERT INTO agents (id, account_id, name, model_provider, model, delete_protection, status, status_reason,
			fields, created_at, updated_at, total_messages, total_conversations, error_millis)
			VALUES (?, 'acct_1', ?, 'openai', 'gpt-4o', ?, 'active', '', ?, ?, ?, ?, ?, 0)`
		exec(agent, "agt_1", "alpha", true,
			`{"clients":["discord","telegram"],"deleteProtection":true,"model":"gpt-4o","modelProvider":"openai","name":"alpha","tone":"dry"}`,
			t0, t0, 3, 2)
		exec(agent, "agt_2", "beta", false, `{"clients":null,"model":"gpt-4o","modelProvider":"openai","name":"beta"}`, t0, t0, 0, 0)
		exec(agent, "agt_3", "gamma", false, `{"model":"gpt-4o","modelProvider":"openai","name":"gamma"}`, t0, t0, 0, 0)
		exec(`INSERT INTO conversations (id, agent_id, key, created_at) VALUES
			('conv_1', 'agt_1', 'user:alice', ?), ('conv_2', 'agt_1', 'room:lobby', ?), ('conv_3', 'agt_1', 'user:bob', ?)`,
			t0, t0.Add(time.Minute), t0.Add(2*time.Minute))
		msg := `INSERT INTO messages (id, conversation_id, role, user_id, text, model, prompt_tokens, completion_tokens, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
		exec(msg, "msg_1", "conv_1", "user", "alice", "hello", "", 0, 0, t0.Add(time.Second))
		exec(msg, "msg_2", "conv_1", "assistant", "alice", "hi alice", "gpt-4o", 5, 3, t0.Add(2*time.Second))
		exec(msg, "msg_3", "conv_2", "user", "carol", "anyone?", "", 0, 0, t0.Add(3*time.Minute))
		mustOK(t, closeDB(db))

		s, err := Open(ctx, dsn)
		mustOK(t, err)
		t.Cleanup(func() { _ = s.Close() })

		a, err := s.Agents().GetAgent(ctx, "acct_1", "agt_1")
		mustOK(t, err)
		if a.Name != "alpha" || !a.DeleteProtection || string(a.Fields["tone"]) != `"dry"` ||
			string(a.Fields["clients"]) != `["discord","telegram"]` || a.Metrics.TotalMessages != 3 || !a.CreatedAt.Equal(t0) {
			t.Errorf("agent after migration: %+v", a)
		}
		clients := map[string]string{}
		var rows []agentRow
		mustOK(t, s.r.Select("id", "clients").Find(&rows).Error)
		for _, r := range rows {
			clients[string(r.ID)] = r.Clients
		}
		if want := map[string]string{"agt_1": `["discord","telegram"]`, "agt_2": "", "agt_3": ""}; !maps.Equal(clients, want) {
			t.Errorf("clients = %v, want %v", clients, want)
		}
		var accounts []accountRow
		mustOK(t, s.r.Order("name").Find(&accounts).Error)
		if len(accounts) != 2 || accounts[0].AgentCount != 3 || accounts[1].AgentCount != 0 {
			t.Errorf("accounts after migration: %+v", accounts)
		}
		var keys int64
		mustOK(t, s.r.Model(&keyRow{}).Count(&keys).Error)
		if keys != 1 {
			t.Errorf("%d api keys after migration, want 1", keys)
		}

		convs, total, err := s.Conversations().ListConversations(ctx, "acct_1", "agt_1", domain.ConversationQuery{})
		mustOK(t, err)
		got := map[string]domain.Conversation{}
		for _, c := range convs {
			got[c.ID] = c
		}
		check := func(id string, kind domain.ConversationKind, room, user string, count int64, last time.Time) {
			t.Helper()
			c := got[id]
			if c.Kind != kind || c.RoomID != room || c.UserID != user || c.MessageCount != count ||
				!c.LastMessageAt.Equal(last) || c.Platform != "api" {
				t.Errorf("conversation %s after migration: %+v", id, c)
			}
		}
		if total != 3 {
			t.Fatalf("%d conversations after migration, want 3", total)
		}
		check("conv_1", domain.KindDirect, "", "alice", 2, t0.Add(2*time.Second))
		check("conv_2", domain.KindRoom, "lobby", "", 1, t0.Add(3*time.Minute))
		check("conv_3", domain.KindDirect, "", "bob", 0, t0.Add(2*time.Minute))
		if got["conv_1"].Title != "hello" || got["conv_2"].Title != "anyone?" || got["conv_3"].Title != "" {
			t.Errorf("titles from the first user messages: %q, %q, %q", got["conv_1"].Title, got["conv_2"].Title, got["conv_3"].Title)
		}

		history, err := s.Conversations().History(ctx, "acct_1", "agt_1", domain.ConversationRef{UserID: "alice"}, 10)
		mustOK(t, err)
		if len(history) != 2 || history[0].Text != "hello" || history[1].Text != "hi alice" ||
			history[1].PromptTokens != 5 || !history[1].CreatedAt.Equal(t0.Add(2*time.Second)) {
			t.Errorf("history after migration: %+v", history)
		}
		carol, _, err := s.Conversations().ListConversations(ctx, "acct_1", "agt_1", domain.ConversationQuery{UserID: "carol"})
		mustOK(t, err)
		if len(carol) != 1 || carol[0].ID != "conv_2" {
			t.Errorf("conversations where carol spoke: %+v", carol)
		}

		list, err := MigrationStatus(ctx, dsn)
		mustOK(t, err)
		for _, m := range list {
			if !m.Applied {
				t.Errorf("migration %s pending after Open", m.Name)
			}
		}
	})
}

// TestMigrateAdoptsAutoMigratedSchema opens a database that AutoMigrate
// made in the release before versioned migrations (the schema of version
// autoMigratedVersion) and checks it is recorded at that version rather
// than migrated again, and the later migrations applied.
func TestMigrateAdoptsAutoMigratedSchema(t *testing.T) {
	migrationBackends(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		mustOK(t, closeDB(releaseDB(t, dsn, autoMigratedVersion)))
		s, err := Open(ctx, dsn)
		mustOK(t, err)
		mustAccount(t, s, "acme")
		mustOK(t, s.Close())
		list, err := MigrationStatus(ctx, dsn)
		mustOK(t, err)
		if len(list) < autoMigratedVersion {
			t.Fatalf("status lists %d migrations", len(list))
		}
		for _, m := range list {
			if !m.Applied {
				t.Errorf("migration %s pending on an AutoMigrate database after Open", m.Name)
			}
		}
	})
}

// TestMigrateUpAndStatus checks Migrate and MigrationStatus alone: all
// pending on an empty database, all applied once migrated, nothing applied
// a second time.
func TestMigrateUpAndStatus(t *testing.T) {
	ctx := context.Background()
	dsn := filepath.Join(t.TempDir(), "agentd.db")
	list, err := MigrationStatus(ctx, dsn)
	mustOK(t, err)
	if len(list) < 2 || list[0].Name != "00001_initial.sql" {
		t.Fatalf("status of an empty database: %+v", list)
	}
	for _, m := range list {
		if m.Applied {
			t.Errorf("migration %s applied on an empty database", m.Name)
		}
	}
	applied, err := Migrate(ctx, dsn)
	mustOK(t, err)
	if len(applied) != len(list) {
		t.Errorf("applied %d migrations, want %d", len(applied), len(list))
	}
	applied, err = Migrate(ctx, dsn)
	mustOK(t, err)
	if len(applied) != 0 {
		t.Errorf("second run applied %+v", applied)
	}
	list, err = MigrationStatus(ctx, dsn)
	mustOK(t, err)
	for _, m := range list {
		if !m.Applied || m.AppliedAt.IsZero() {
			t.Errorf("migration %+v not applied after Migrate", m)
		}
	}
}

// TestMigrateReplicasStartTogether opens several stores at once on one
// fresh PostgreSQL database: all must succeed and each migration must be
// applied exactly once.
func TestMigrateReplicasStartTogether(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	for i, err := range together(5, func(int) error { return openClose(ctx, dsn) }) {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	var versions []int64
	mustOK(t, rawDB(t, dsn).Raw("SELECT version_id FROM goose_db_version WHERE version_id > 0 ORDER BY id").
		Scan(&versions).Error)
	list, err := MigrationStatus(ctx, dsn)
	mustOK(t, err)
	for i, v := range versions {
		if v != list[i].Version {
			t.Errorf("recorded versions %v, want each migration once, in order", versions)
			break
		}
	}
	if len(versions) != len(list) {
		t.Errorf("recorded %d versions, want %d", len(versions), len(list))
	}
}

func TestAgentCountFollowsCreatesAndDeletes(t *testing.T) {
	backends(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		acct := mustAccount(t, s, "acme")
		a := mustAgent(t, s, acct.ID, "a")
		mustAgent(t, s, acct.ID, "b")
		protected := mustAgent(t, s, acct.ID, "c", "deleteProtection", true)
		_, err := s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		mustOK(t, err)
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, protected.ID, domain.AnyVersion)
		wantErr(t, err, domain.ErrDeleteProtected)
		_, err = s.Agents().DeleteAgent(ctx, acct.ID, a.ID, domain.AnyVersion)
		wantErr(t, err, domain.ErrNotFound)
		_, total, err := s.Agents().ListAgents(ctx, acct.ID, domain.ListQuery{})
		mustOK(t, err)
		if total != 2 {
			t.Errorf("total after deletes = %d, want 2", total)
		}
		// The quota counts the same agents: 2 of 3 leaves room for one.
		_, err = s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: fields(t, "name", "d")}, 3)
		mustOK(t, err)
		_, err = s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: fields(t, "name", "e")}, 3)
		wantErr(t, err, domain.ErrQuotaExceeded)
	})
}

// TestMigrateSQLiteProcessesStartTogether migrates or opens one fresh
// SQLite file from several connections at once, as `agentd serve` and CLI
// commands starting together would: all must succeed. The first connection
// to a fresh file switches it to WAL, which needs the file to itself;
// SQLite refuses at once, without waiting out the busy timeout, a second
// connection that tries the same switch meanwhile, so the switch must be
// inside the migration lock. Several rounds, since one round misses the
// window most of the time.
func TestMigrateSQLiteProcessesStartTogether(t *testing.T) {
	ctx := context.Background()
	const processes, rounds = 6, 8
	for round := range rounds {
		dsn := filepath.Join(t.TempDir(), "agentd.db")
		errs := together(processes, func(i int) error {
			if i%2 == 0 {
				_, err := Migrate(ctx, dsn)
				return err
			}
			return openClose(ctx, dsn)
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, process %d: %v", round, i, err)
			}
		}
	}
}

// together runs fn(0) to fn(n-1) at once, as processes or replicas starting
// together, and returns their errors.
func together(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errs
}

// openClose opens a store on dsn, as a starting process does, and closes it.
func openClose(ctx context.Context, dsn string) error {
	s, err := Open(ctx, dsn)
	if err == nil {
		err = s.Close()
	}
	return err
}
