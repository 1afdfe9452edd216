package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentd/agentd/store"
	"github.com/labstack/echo/v4"
	"github.com/oklog/ulid/v2"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// baselineHandler is the limit of the HTTP stack: a bare Echo server that
// answers GET with a fixed JSON document of docBytes bytes (the size of
// agentd's Get Agent) and POST by reading the body and answering 201.
func baselineHandler(docBytes int) http.Handler {
	doc := fixedDocument(docBytes)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/doc", func(c echo.Context) error { return c.JSONBlob(http.StatusOK, doc) })
	e.POST("/doc", func(c echo.Context) error {
		if _, err := io.Copy(io.Discard, c.Request().Body); err != nil {
			return err
		}
		return c.JSONBlob(http.StatusCreated, []byte(`{"success":true}`))
	})
	return e
}

// fixedDocument is a JSON object of exactly n bytes (at least 16).
func fixedDocument(n int) []byte {
	const head, tail = `{"success":true,"pad":"`, `"}`
	return []byte(head + strings.Repeat("x", max(0, n-len(head)-len(tail))) + tail)
}

// floorDoc is the row of the floor server: a primary key, an indexed
// owner and sort column, and the document.
type floorDoc struct {
	ID        string    `gorm:"primaryKey"`
	AccountID string    `gorm:"not null;index:idx_docs_account_created,priority:1"`
	CreatedAt time.Time `gorm:"not null;index:idx_docs_account_created,priority:2"`
	Doc       string    `gorm:"not null"`
}

// floorServer is the limit of the storage stack: Echo + GORM on agentd's
// kind of database with agentd's pool layout (SQLite: one writer, a read
// pool, WAL; PostgreSQL: one pool of store.DefaultPool) and prepared
// statements, one primary-key read or one insert per request, and nothing
// else.
type floorServer struct {
	w, r *gorm.DB
}

// openFloor opens (creating) the floor database dsn: a postgres:// or
// postgresql:// URL, or else a SQLite file path.
func openFloor(dsn string) (*floorServer, error) {
	open := func(d gorm.Dialector, p store.Pool) (*gorm.DB, error) {
		db, err := gorm.Open(d, &gorm.Config{
			Logger: logger.Discard, SkipDefaultTransaction: true, PrepareStmt: true,
		})
		if err != nil {
			return nil, fmt.Errorf("open floor db: %w", err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			return nil, err
		}
		sqlDB.SetMaxOpenConns(p.MaxOpen)
		sqlDB.SetMaxIdleConns(p.MaxIdle)
		sqlDB.SetConnMaxLifetime(p.MaxLifetime)
		sqlDB.SetConnMaxIdleTime(p.MaxIdleTime)
		return db, nil
	}
	pg := strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
	wd, wp := sqlite.Open(dsn+"?_journal_mode=WAL&_busy_timeout=5000&_txlock=immediate"), store.Pool{MaxOpen: 1, MaxIdle: 1}
	if pg {
		wd, wp = postgres.Open(dsn), store.DefaultPool
	}
	w, err := open(wd, wp)
	if err != nil {
		return nil, err
	}
	if err := w.AutoMigrate(&floorDoc{}); err != nil {
		return nil, fmt.Errorf("migrate floor db: %w", err)
	}
	if pg {
		return &floorServer{w: w, r: w}, nil
	}
	n := max(4, runtime.NumCPU())
	r, err := open(sqlite.Open(dsn+"?_busy_timeout=5000&_query_only=1"), store.Pool{MaxOpen: n, MaxIdle: n})
	if err != nil {
		return nil, err
	}
	return &floorServer{w: w, r: r}, nil
}

// database names the floor's database and its version, e.g. "SQLite
// 3.46.1" or "PostgreSQL 15.4".
func (f *floorServer) database() (string, error) {
	name, query := "SQLite", "SELECT sqlite_version()"
	if f.w.Dialector.Name() == "postgres" {
		name, query = "PostgreSQL", "SHOW server_version"
	}
	var v string
	if err := f.w.Raw(query).Scan(&v).Error; err != nil {
		return "", err
	}
	v, _, _ = strings.Cut(v, " ") // PostgreSQL's may go on with the distribution's build
	return name + " " + v, nil
}

// close closes the floor's pools.
func (f *floorServer) close() {
	for _, db := range []*gorm.DB{f.w, f.r} {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
}

// seed inserts n documents doc of account and returns their ids.
func (f *floorServer) seed(account string, doc []byte, n int) ([]string, error) {
	ids := make([]string, n)
	rows := make([]floorDoc, n)
	t := time.Now().UTC()
	for i := range rows {
		ids[i] = ulid.Make().String()
		rows[i] = floorDoc{ID: ids[i], AccountID: account, CreatedAt: t.Add(time.Duration(i)), Doc: string(doc)}
	}
	return ids, f.w.CreateInBatches(rows, 500).Error
}

func (f *floorServer) handler() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/docs/:id", func(c echo.Context) error {
		var d floorDoc
		if err := f.r.WithContext(c.Request().Context()).Take(&d, "id = ?", c.Param("id")).Error; err != nil {
			return echo.NewHTTPError(http.StatusNotFound)
		}
		return c.JSONBlob(http.StatusOK, []byte(d.Doc))
	})
	e.GET("/docs", func(c echo.Context) error {
		limit, _ := strconv.Atoi(c.QueryParam("limit"))
		var ds []floorDoc
		err := f.r.WithContext(c.Request().Context()).Where("account_id = ?", "a").
			Order("created_at DESC").Limit(limit).Find(&ds).Error
		if err != nil {
			return err
		}
		docs := make([]json.RawMessage, len(ds))
		for i, d := range ds {
			docs[i] = json.RawMessage(d.Doc)
		}
		return c.JSON(http.StatusOK, docs)
	})
	e.POST("/docs", func(c echo.Context) error {
		body, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return err
		}
		d := floorDoc{ID: ulid.Make().String(), AccountID: "b", CreatedAt: time.Now().UTC(), Doc: string(body)}
		if err := f.w.WithContext(c.Request().Context()).Create(&d).Error; err != nil {
			return err
		}
		return c.JSON(http.StatusCreated, map[string]string{"id": d.ID})
	})
	return e
}

// provider is an instant OpenAI wire-format provider. Stream replies
// record when their first token left, by the marker in the user message,
// so the load generator can measure what agentd adds to the first token.
type provider struct {
	mu    sync.Mutex
	first map[string]time.Time // marker → when the first token was written
}

func newProvider() *provider { return &provider{first: map[string]time.Time{}} }

// markerPrefix starts the marker a stream request carries in its text.
const markerPrefix = "ttft-"

var completion = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"a short reply from the model"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":20,"completion_tokens":6,"total_tokens":26}}`)

func chunk(delta string, finish string) string {
	return `data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":` +
		delta + `,"finish_reason":` + finish + "}]}\n\n"
}

var streamTail = chunk(`{"content":" reply"}`, "null") + chunk(`{}`, `"stop"`) +
	`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":6,"total_tokens":26}}` + "\n\n" +
	"data: [DONE]\n\n"

// toolCallCompletion asks for the tool the tool agents have.
var toolCallCompletion = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_b","type":"function",` +
	`"function":{"name":"get_price","arguments":"{\"symbol\":\"SOL\"}"}}]},"finish_reason":"tool_calls"}],` +
	`"usage":{"prompt_tokens":20,"completion_tokens":6,"total_tokens":26}}`)

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if !bytes.Contains(body, []byte(`"stream":true`)) {
		w.Header().Set("Content-Type", "application/json")
		// A call that offers tools and has no result yet asks for one.
		if bytes.Contains(body, []byte(`"tools":[`)) && !bytes.Contains(body, []byte(`"role":"tool"`)) {
			_, _ = w.Write(toolCallCompletion)
			return
		}
		_, _ = w.Write(completion)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	_, _ = io.WriteString(w, chunk(`{"role":"assistant","content":""}`, "null"))
	_, _ = io.WriteString(w, chunk(`{"content":"first"}`, "null"))
	// Noted before the flush: the client may read the token before a
	// note taken after it would be stored.
	sent := time.Now()
	if i := bytes.LastIndex(body, []byte(markerPrefix)); i >= 0 { // the new message is last, after the history
		end := i + len(markerPrefix)
		for end < len(body) && body[end] >= '0' && body[end] <= '9' {
			end++
		}
		p.mu.Lock()
		p.first[string(body[i:end])] = sent
		p.mu.Unlock()
	}
	_ = rc.Flush()
	_, _ = io.WriteString(w, streamTail)
}

// actionHandler is an instant action handler.
func actionHandler(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"symbol":"SOL","price":142}`)
}

// firstSent returns when the first token of the stream marked marker left.
func (p *provider) firstSent(marker string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.first[marker]
	delete(p.first, marker)
	return t, ok
}

// serveOn serves h on l until ctx is done.
func serveOn(ctx context.Context, l net.Listener, h http.Handler) {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = hs.Close() }()
	go func() { _ = hs.Serve(l) }()
}
