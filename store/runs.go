package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// runRow is a row of runs. Lane is what runs one at a time: the run's
// conversation, or the run itself when it has none. Reply is the stored
// reply as JSON ("" until one was stored).
type runRow struct {
	ID             ctext      `gorm:"primaryKey;index:idx_runs_agent_created,priority:3;index:idx_runs_account_created,priority:3;index:idx_runs_lane_created,priority:3"`
	AccountID      ctext      `gorm:"not null;index:idx_runs_account_created,priority:1"`
	AgentID        ctext      `gorm:"not null;index:idx_runs_agent_created,priority:1;index:idx_runs_agent_user_created,priority:1"`
	ConversationID ctext      `gorm:"not null;default:''"`
	Lane           ctext      `gorm:"not null;index:idx_runs_lane_created,priority:1"`
	UserID         string     `gorm:"not null;default:'';index:idx_runs_agent_user_created,priority:2"`
	RoomID         string     `gorm:"not null;default:''"`
	Source         string     `gorm:"not null"`
	Status         string     `gorm:"not null;index:idx_runs_status"`
	InputText      string     `gorm:"type:text;not null"`
	MessageID      string     `gorm:"not null"`
	Reply          string     `gorm:"type:text;not null;default:''"`
	ErrorCode      string     `gorm:"not null;default:''"`
	ErrorMessage   string     `gorm:"type:text;not null;default:''"`
	ParentRunID    string     `gorm:"not null;default:'';index:idx_runs_parent"`
	ScheduleID     string     `gorm:"not null;default:''"`
	Strategy       string     `gorm:"not null"`
	Attempts       int        `gorm:"not null;default:0"`
	CreatedAt      time.Time  `gorm:"not null;autoCreateTime:false;index:idx_runs_agent_created,priority:2;index:idx_runs_account_created,priority:2;index:idx_runs_lane_created,priority:2;index:idx_runs_agent_user_created,priority:3"`
	StartedAt      *time.Time `gorm:""`
	FinishedAt     *time.Time `gorm:""`
	// BeatAt is renewed by whoever holds the run while it has not ended.
	BeatAt time.Time `gorm:"not null;autoCreateTime:false"`
	// Input and Steps are JSON: how the message came in, and the run's
	// finished steps ("" for none), read by whoever resumes the run.
	Input string `gorm:"type:text;not null;default:''"`
	Steps string `gorm:"type:text;not null;default:''"`
	// ExpiresAt is when a run in requires_action stops waiting.
	ExpiresAt *time.Time `gorm:""`
	// InputTokens and OutputTokens are the run's own calls'; CostMicros
	// adds to its own cost that of the runs it caused (see addRunCost).
	InputTokens  int   `gorm:"not null;default:0"`
	OutputTokens int   `gorm:"not null;default:0"`
	CostMicros   int64 `gorm:"not null;default:0"`
	// OwnCostMicros is what the run's own calls cost so far, and
	// StepCostMicros what of it the rollups do not hold yet: what a budget
	// check counts of a run not finished (see BudgetSpend).
	OwnCostMicros  int64 `gorm:"not null;default:0;index:idx_runs_agent_user_created,priority:4"`
	StepCostMicros int64 `gorm:"not null;default:0"`
}

// RunRetention is how long a run is kept after it ended: the runs of an
// agent older than that go when it accepts its next one.
const RunRetention = 30 * 24 * time.Hour

// RunBeatTimeout is how long a run that has not ended goes without a beat
// before its holder is taken for lost and another process may resume it:
// with a beat every few seconds and a look for lost runs every
// RunBeatTimeout/3, a lost run is resumed well within a minute.
const RunBeatTimeout = 30 * time.Second

// MaxRunStarts is how many times a run is started before one that never
// finishes fails with RUN_ABANDONED.
const MaxRunStarts = 3

// TableName names the table.
func (runRow) TableName() string { return "runs" }

// activeStatuses are the statuses of a run that has not ended.
var activeStatuses = []string{string(domain.RunQueued), string(domain.RunRunning), string(domain.RunRequiresAction)}

// AcceptRun stores r as a queued run of its conversation (and deletes the
// agent's runs past RunRetention), or as a running one when r.StartAtOnce
// and no run of its conversation is left ahead of it, applying its
// strategy to the runs of the conversation that have not ended, in one
// transaction: reject returns ErrConversationBusy naming the run in the
// way; interrupt and rollback end them (interrupted, rolled_back); merge
// appends the text to the last queued run and returns that one (no new
// run), or rolls back a running one and makes a run of both texts. It
// returns the run the message belongs to and the runs it stopped
// (reporting run.cancelled for each), and ErrNotFound for a missing agent
// or one of another account.
func (s Runs) AcceptRun(ctx context.Context, r domain.Run) (domain.Run, []domain.Run, error) {
	t := s.now()
	r.ID, r.Status, r.CreatedAt, r.Attempts = newID("run_", t), domain.RunQueued, t, 0
	in := r // what was asked, whatever run the message ends in (a retried transaction starts from it)
	var stopped []runRow
	err := s.writeEvents(ctx, "accept run", func(tx *gorm.DB, emit emitFunc) error {
		var err error
		if r, stopped, err = s.queue(tx, emit, in, t); err != nil || in.ScheduleID == "" || in.ScheduleDue.IsZero() {
			return err
		}
		// The run and the due time it fires commit together, or neither.
		return s.claimDue(tx, in.ScheduleID, in.ScheduleDue, map[string]any{"last_run_at": t, "last_run_id": r.ID, "last_error": ""})
	})
	if err != nil {
		return domain.Run{}, nil, err
	}
	out := make([]domain.Run, len(stopped))
	for i, row := range stopped {
		out[i] = toRun(row)
	}
	return r, out, nil
}

// RefuseRun stores r as a run that failed as it was accepted, with code
// and message (a budget refused it): it reports run.failed and, for a
// schedule's run, takes the due time it fires as AcceptRun would, so the
// schedule moves on. ErrScheduleTaken when another process fired it.
func (s Runs) RefuseRun(ctx context.Context, r domain.Run, code, message string) (domain.Run, error) {
	t := s.now()
	r.ID, r.Status, r.CreatedAt, r.FinishedAt, r.Attempts = newID("run_", t), domain.RunFailed, t, t, 0
	r.ErrorCode, r.ErrorMessage = code, message
	err := s.writeEvents(ctx, "refuse run", func(tx *gorm.DB, emit emitFunc) error {
		if err := lockOwned(tx, r.AccountID, r.AgentID); err != nil {
			return err
		}
		row := fromRun(r)
		row.Lane, row.BeatAt, row.FinishedAt = ctext(r.ID), t, &t
		row.ErrorCode, row.ErrorMessage = code, message
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		if r.ScheduleID != "" && !r.ScheduleDue.IsZero() {
			if err := s.claimDue(tx, r.ScheduleID, r.ScheduleDue, map[string]any{"last_run_at": t, "last_run_id": r.ID}); err != nil {
				return err
			}
			if err := noteRunFailed(tx, row); err != nil {
				return err
			}
		}
		return emitEnded(emit, []runRow{row})
	})
	if err != nil {
		return domain.Run{}, err
	}
	return r, nil
}

// queue stores r as a queued run in tx, applying its strategy to the runs
// of its lane that have not ended (see AcceptRun), and returns the run the
// message belongs to and the runs it stopped.
func (s Runs) queue(tx *gorm.DB, emit emitFunc, r domain.Run, t time.Time) (domain.Run, []runRow, error) {
	lane := r.ConversationID
	if lane == "" {
		lane = r.ID
	}
	if err := lockOwned(tx, r.AccountID, r.AgentID); err != nil {
		return r, nil, err
	}
	old := t.Add(-RunRetention)
	if err := tx.Where("agent_id = ? AND created_at < ? AND finished_at < ?", r.AgentID, old, old).Delete(&runRow{}).Error; err != nil {
		return r, nil, err
	}
	active, err := s.liveRuns(tx, ctext(lane))
	if err != nil || len(active) == 0 {
		r = startAtOnce(r, t)
		return r, nil, s.insertRun(tx, r, lane, err)
	}
	var stopped []runRow
	switch r.Strategy {
	case domain.StrategyReject:
		return r, nil, &domain.Error{Code: domain.CodeBusy, RunID: string(active[0].ID)}
	case domain.StrategyInterrupt, domain.StrategyRollback:
		status := domain.RunInterrupted
		if r.Strategy == domain.StrategyRollback {
			status = domain.RunRolledBack
		}
		if stopped, err = endRuns(tx, active, status, t); err != nil {
			return r, nil, err
		}
		if err := emitEnded(emit, stopped); err != nil {
			return r, nil, err
		}
	case domain.StrategyMerge:
		if last := active[len(active)-1]; last.Status == string(domain.RunQueued) {
			last.InputText += "\n" + r.Text
			return toRun(last), nil, tx.Model(&runRow{}).Where("id = ?", last.ID).Update("input_text", last.InputText).Error
		}
		texts := make([]string, 0, len(active)+1)
		for _, a := range active {
			texts = append(texts, a.InputText)
		}
		r.Text = strings.Join(append(texts, r.Text), "\n")
		if stopped, err = endRuns(tx, active, domain.RunRolledBack, t); err != nil {
			return r, nil, err
		}
		if err := emitEnded(emit, stopped); err != nil {
			return r, nil, err
		}
	}
	if len(stopped) == len(active) { // none left ahead of it
		r = startAtOnce(r, t)
	}
	return r, stopped, s.insertRun(tx, r, lane, nil)
}

// startAtOnce is r started at t, as StartRun would start it, when it
// asks to be (StartAtOnce) and is first of its lane: one write fewer.
func startAtOnce(r domain.Run, t time.Time) domain.Run {
	if r.StartAtOnce {
		r.Status, r.StartedAt, r.Attempts = domain.RunRunning, t, 1
	}
	return r
}

// emitEnded reports the end of runs.
func emitEnded(emit emitFunc, runs []runRow) error {
	for _, r := range runs {
		if err := emit(runEnded(toRun(r))); err != nil {
			return err
		}
	}
	return nil
}

// insertRun stores r in lane, with its job (WithRunJobs), unless err is
// set.
func (s Runs) insertRun(tx *gorm.DB, r domain.Run, lane string, err error) error {
	if err != nil {
		return err
	}
	row := fromRun(r)
	row.Lane, row.BeatAt = ctext(lane), r.CreatedAt
	if !r.StartedAt.IsZero() {
		row.StartedAt = &r.StartedAt
	}
	if err := tx.Create(&row).Error; err != nil {
		return err
	}
	return s.scheduleRunJob(tx, r.ID, r.CreatedAt.Add(RunBeatTimeout))
}

// endRuns ends runs in status at t and returns them as they are now.
func endRuns(tx *gorm.DB, runs []runRow, status domain.RunStatus, t time.Time) ([]runRow, error) {
	ids := make([]ctext, len(runs))
	for i := range runs {
		ids[i] = runs[i].ID
		runs[i].Status, runs[i].FinishedAt = string(status), &t
	}
	err := tx.Model(&runRow{}).Where("id IN ?", ids).Updates(map[string]any{"status": string(status), "finished_at": t}).Error
	return runs, err
}

// StartRun moves run id from queued to running when it is the first run
// of its lane that has not ended, counting the start, and returns it with
// true; false (and the run as it is) when it must wait or has ended.
// ErrRunNotFound when there is no such run.
func (s Runs) StartRun(ctx context.Context, id string) (domain.Run, bool, error) {
	// Most looks find the run still behind another: a read says so
	// without taking the writer, which a backlog's waiting runs would
	// otherwise queue on at every run's end.
	if row, first, err := s.firstOfLane(ctx, id); err != nil || !first {
		return toRun(row), false, err
	}
	var row runRow
	started := false
	err := s.writeEvents(ctx, "start run", func(tx *gorm.DB, emit emitFunc) error {
		if err := forUpdate(tx).Take(&row, "id = ?", id).Error; err != nil {
			return notFoundAs(err, domain.ErrRunNotFound)
		}
		if row.Status != string(domain.RunQueued) {
			return nil
		}
		t := s.now()
		live, err := s.liveRuns(tx, row.Lane)
		if err != nil || len(live) == 0 || live[0].ID != row.ID {
			return err
		}
		// Only the first start counts here: a run going on after a
		// decision is not a new attempt; ClaimRun counts those after a loss.
		row.Status, row.StartedAt, row.Attempts, row.BeatAt = string(domain.RunRunning), &t, max(row.Attempts, 1), t
		started = true
		return tx.Model(&runRow{}).Where("id = ?", row.ID).
			Updates(map[string]any{"status": row.Status, "started_at": t, "attempts": row.Attempts, "beat_at": t}).Error
	})
	if err != nil {
		return domain.Run{}, false, err
	}
	return toRun(row), started, nil
}

// firstOfLane reads run id and whether it is queued and first of the
// runs of its lane that have not ended.
func (s Runs) firstOfLane(ctx context.Context, id string) (runRow, bool, error) {
	db := s.read(ctx)
	var row runRow
	if err := db.Take(&row, "id = ?", id).Error; err != nil {
		return row, false, wrap("start run", notFoundAs(err, domain.ErrRunNotFound))
	}
	if row.Status != string(domain.RunQueued) {
		return row, false, nil
	}
	var first []ctext
	err := db.Model(&runRow{}).Where("lane = ? AND status IN ?", row.Lane, activeStatuses).
		Order("created_at").Order("id").Limit(1).Pluck("id", &first).Error
	return row, err == nil && len(first) == 1 && first[0] == row.ID, wrap("start run", err)
}

// liveRuns are the runs of lane that have not ended, oldest first. A run
// whose holder was lost stays among them until it is resumed: the order
// of the conversation holds across a crash.
func (s *core) liveRuns(tx *gorm.DB, lane ctext) ([]runRow, error) {
	var active []runRow
	err := tx.Where("lane = ? AND status IN ?", lane, activeStatuses).Order("created_at").Order("id").Find(&active).Error
	return active, err
}

// abandon fails a run started MaxRunStarts times without finishing.
func abandon(tx *gorm.DB, row runRow, now time.Time, emit emitFunc) (runRow, error) {
	ended, err := endRuns(tx, []runRow{row}, domain.RunFailed, now)
	if err != nil {
		return row, err
	}
	row = ended[0]
	row.ErrorCode, row.ErrorMessage = "RUN_ABANDONED", "The run was started 3 times without finishing."
	err = tx.Model(&runRow{}).Where("id = ?", row.ID).
		Updates(map[string]any{"error_code": row.ErrorCode, "error_message": row.ErrorMessage}).Error
	if err == nil {
		err = noteRunFailed(tx, row)
	}
	if err != nil {
		return row, err
	}
	return row, emitEnded(emit, ended)
}

// BeatRun renews the beat of run id while it has not ended: whoever holds
// it is alive.
func (s Runs) BeatRun(ctx context.Context, id string) error {
	return s.write(ctx, "beat run", func(tx *gorm.DB) error {
		return tx.Model(&runRow{}).Where("id = ? AND status IN ?", id, activeStatuses).Update("beat_at", s.now()).Error
	})
}

// FinishRun ends run id in status with what it made (reply nil when none
// was stored; code and message for a failure). A run that another message
// or a cancel ended first keeps that status, and takes the reply. The run
// that ends here reports its run.* event. It returns the run as stored;
// ErrRunNotFound when there is none.
func (s Runs) FinishRun(ctx context.Context, id string, status domain.RunStatus, reply *domain.Reply, code, message string) (domain.Run, error) {
	var row runRow
	err := s.writeEvents(ctx, "finish run", func(tx *gorm.DB, emit emitFunc) error {
		var err error
		row, err = s.finishRun(tx, emit, id, status, reply, code, message)
		return err
	})
	if err != nil {
		return domain.Run{}, err
	}
	return toRun(row), nil
}

// finishRun is FinishRun in tx: it ends run id and returns it as stored.
// emit is nil when the account has no webhook, so there is no event to
// look for a webhook of.
func (s *core) finishRun(tx *gorm.DB, emit emitFunc, id string, status domain.RunStatus, reply *domain.Reply, code, message string) (runRow, error) {
	var row runRow
	if err := forUpdate(tx).Take(&row, "id = ?", id).Error; err != nil {
		return row, notFoundAs(err, domain.ErrRunNotFound)
	}
	ends := !domain.RunStatus(row.Status).Final()
	if ends {
		t := s.now()
		row.Status, row.FinishedAt, row.ErrorCode, row.ErrorMessage = string(status), &t, code, message
	}
	if reply != nil {
		b, err := json.Marshal(reply)
		if err != nil {
			return row, err
		}
		row.Reply = string(b)
	}
	err := tx.Model(&runRow{}).Where("id = ?", row.ID).Updates(map[string]any{"status": row.Status,
		"finished_at": row.FinishedAt, "error_code": row.ErrorCode, "error_message": row.ErrorMessage, "reply": row.Reply}).Error
	if err != nil || !ends {
		return row, err
	}
	if err := noteRunFailed(tx, row); err != nil || emit == nil {
		return row, err
	}
	return row, emitEnded(emit, []runRow{row})
}

// CancelRun ends run id of the account's agent as cancelled unless it has
// ended: ErrRunFinished (with its status) then. A running run is ended in
// the store; whoever runs it sees that and stops. ErrRunNotFound when the
// agent has no such run, ErrNotFound when the agent is not the account's.
func (s Runs) CancelRun(ctx context.Context, accountID, agentID, id string) (domain.Run, error) {
	var row runRow
	err := s.writeEvents(ctx, "cancel run", func(tx *gorm.DB, emit emitFunc) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		if err := forUpdate(tx).Take(&row, "id = ? AND agent_id = ?", id, agentID).Error; err != nil {
			return notFoundAs(err, domain.ErrRunNotFound)
		}
		if domain.RunStatus(row.Status).Final() {
			return &domain.Error{Code: domain.CodeFinished, Resource: "run", Status: row.Status}
		}
		ended, err := endRuns(tx, []runRow{row}, domain.RunCancelled, s.now())
		row = ended[0]
		if err != nil {
			return err
		}
		return emitEnded(emit, ended)
	})
	if err != nil {
		return domain.Run{}, err
	}
	return toRun(row), nil
}

// RunStatus is run id's status; ErrRunNotFound when there is none.
func (s Runs) RunStatus(ctx context.Context, id string) (domain.RunStatus, error) {
	var status []string
	if err := s.read(ctx).Model(&runRow{}).Where("id = ?", id).Pluck("status", &status).Error; err != nil {
		return "", wrap("run status", err)
	}
	if len(status) == 0 {
		return "", wrap("run status", domain.ErrRunNotFound)
	}
	return domain.RunStatus(status[0]), nil
}

// GetRun is run id of the account's agent: ErrNotFound when the agent is
// not the account's, ErrRunNotFound when it has no such run.
func (s Runs) GetRun(ctx context.Context, accountID, agentID, id string) (domain.Run, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return domain.Run{}, wrap("get run", err)
	}
	var row runRow
	if err := db.Take(&row, "id = ? AND agent_id = ?", id, agentID).Error; err != nil {
		return domain.Run{}, wrap("get run", notFoundAs(err, domain.ErrRunNotFound))
	}
	return toRun(row), nil
}

// RunOfMessage is the run whose reply is message messageID of the
// account's agent: ErrNotFound when the agent is not the account's,
// ErrRunNotFound when no run has that message.
func (s Runs) RunOfMessage(ctx context.Context, accountID, agentID, messageID string) (domain.Run, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return domain.Run{}, wrap("run of message", err)
	}
	var row runRow
	if err := db.Take(&row, "agent_id = ? AND message_id = ?", agentID, messageID).Error; err != nil {
		return domain.Run{}, wrap("run of message", notFoundAs(err, domain.ErrRunNotFound))
	}
	return toRun(row), nil
}

// ListRuns is a page of the account's runs, newest first, and how many
// match q. A q.AgentID of another account (or none) matches nothing.
func (s Runs) ListRuns(ctx context.Context, accountID string, q domain.RunQuery) ([]domain.Run, int64, error) {
	sel := s.read(ctx).Model(&runRow{}).Where("account_id = ?", accountID)
	for col, v := range map[string]string{"agent_id": q.AgentID, "conversation_id": q.ConversationID,
		"status": string(q.Status), "source": string(q.Source)} {
		if v != "" {
			sel = sel.Where(col+" = ?", v)
		}
	}
	sel = sel.Session(&gorm.Session{})
	var total int64
	if err := sel.Count(&total).Error; err != nil {
		return nil, 0, wrap("list runs", err)
	}
	page, limit, past := pageBounds(q.Page, q.Limit, total)
	if past {
		return []domain.Run{}, total, nil
	}
	var rows []runRow
	if err := sel.Order("created_at DESC").Order("id DESC").Offset((page - 1) * limit).Limit(limit).Find(&rows).Error; err != nil {
		return nil, 0, wrap("list runs", err)
	}
	out := make([]domain.Run, len(rows))
	for i, r := range rows {
		out[i] = toRun(r)
	}
	return out, total, nil
}

// notFoundAs is notFound when err is GORM's not-found, else err.
func notFoundAs(err error, notFound error) error {
	if isNotFound(err) {
		return notFound
	}
	return err
}

// maxAskChain bounds the runs addRunCost walks up from one run: a chain of
// asks is far shorter, and a bound keeps a corrupt chain from looping.
const maxAskChain = 16

// addRunCost records run id's own tokens and adds its cost to it and to
// every run that caused it (parent_run_id, up the chain of asks), in the
// transaction that stores its reply: a run's cost_micros is then its own
// with all it caused, whichever of them finished first. A run id of ""
// (an exchange of no run) records nothing.
func addRunCost(tx *gorm.DB, id string, in, out int, cost int64) error {
	if id == "" {
		return nil
	}
	// The reply's cost goes to the rollups in this transaction: the run's
	// steps no longer count apart from them.
	err := tx.Exec(`UPDATE runs SET input_tokens = ?, output_tokens = ?, cost_micros = cost_micros + ?,
		own_cost_micros = ?, step_cost_micros = 0 WHERE id = ?`, in, out, cost, cost, id).Error
	for range maxAskChain {
		if err != nil || cost == 0 {
			return err
		}
		var parent string
		if err := tx.Raw(`SELECT parent_run_id FROM runs WHERE id = ?`, id).Scan(&parent).Error; err != nil || parent == "" {
			return err
		}
		id = parent
		err = tx.Exec(`UPDATE runs SET cost_micros = cost_micros + ? WHERE id = ?`, cost, id).Error
	}
	return err
}

func fromRun(r domain.Run) runRow {
	input, _ := json.Marshal(r.Input) // plain structs
	return runRow{Input: string(input), ID: ctext(r.ID), AccountID: ctext(r.AccountID), AgentID: ctext(r.AgentID),
		ConversationID: ctext(r.ConversationID), UserID: r.UserID, RoomID: r.RoomID, Source: string(r.Source),
		Status: string(r.Status), InputText: r.Text, MessageID: r.MessageID, ParentRunID: r.ParentRunID,
		ScheduleID: r.ScheduleID, Strategy: string(r.Strategy), Attempts: r.Attempts, CreatedAt: r.CreatedAt}
}

func toRun(r runRow) domain.Run {
	out := domain.Run{ID: string(r.ID), AccountID: string(r.AccountID), AgentID: string(r.AgentID),
		ConversationID: string(r.ConversationID), UserID: r.UserID, RoomID: r.RoomID, Source: domain.RunSource(r.Source),
		Status: domain.RunStatus(r.Status), Text: r.InputText, MessageID: r.MessageID, ErrorCode: r.ErrorCode,
		ErrorMessage: r.ErrorMessage, ParentRunID: r.ParentRunID, ScheduleID: r.ScheduleID,
		Strategy: domain.Strategy(r.Strategy), Attempts: r.Attempts, CreatedAt: utc(r.CreatedAt),
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostMicros: r.CostMicros}
	if r.StartedAt != nil {
		out.StartedAt = utc(*r.StartedAt)
	}
	if r.FinishedAt != nil {
		out.FinishedAt = utc(*r.FinishedAt)
	}
	if r.Reply != "" {
		var reply domain.Reply
		if json.Unmarshal([]byte(r.Reply), &reply) == nil {
			out.Reply = &reply
		}
	}
	_ = json.Unmarshal([]byte(r.Input), &out.Input) // written by fromRun; "" before it
	_ = json.Unmarshal([]byte(r.Steps), &out.Steps) // written by SaveRunSteps
	if r.ExpiresAt != nil {
		out.ExpiresAt = utc(*r.ExpiresAt)
	}
	return out
}
