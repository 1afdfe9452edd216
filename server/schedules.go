package server

import (
	"context"
	"time"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
	"github.com/oapi-codegen/nullable"
)

// CreateSchedule puts the agent on a clock.
func (s *Server) CreateSchedule(ctx context.Context, req gen.CreateScheduleRequestObject) (gen.CreateScheduleResponseObject, error) {
	b := req.Body
	at, err := scheduleAt(b.At)
	if err != nil {
		return nil, err
	}
	sc := domain.Schedule{AccountID: principalFrom(ctx).Account.ID, AgentID: req.AgentId, Name: deref(b.Name),
		Cron: deref(b.Cron), At: at, Timezone: deref(b.Timezone), Text: b.Text, UserID: deref(b.UserId),
		RoomID: deref(b.RoomId), Target: scheduleTarget(b.Target), Enabled: b.Enabled == nil || *b.Enabled}
	created, err := s.cfg.Store.Schedules.CreateSchedule(ctx, sc)
	if err != nil {
		return nil, err
	}
	return gen.CreateSchedule201JSONResponse{Body: gen.ScheduleEnvelope{Success: true, Data: scheduleOut(created)}}, nil
}

// ListSchedules returns a page of the agent's schedules.
func (s *Server) ListSchedules(ctx context.Context, req gen.ListSchedulesRequestObject) (gen.ListSchedulesResponseObject, error) {
	page, limit := pageParams(req.Params.Page, req.Params.Limit)
	list, total, err := s.cfg.Store.Schedules.ListSchedules(ctx, principalFrom(ctx).Account.ID, req.AgentId, page, limit)
	if err != nil {
		return nil, err
	}
	items := make([]gen.Schedule, len(list))
	for i, sc := range list {
		items[i] = scheduleOut(sc)
	}
	return gen.ListSchedules200JSONResponse{Body: gen.ScheduleListEnvelope{Success: true,
		Data: gen.ScheduleList{Items: items, Pagination: pagination(page, limit, total)}}}, nil
}

// GetSchedule returns one schedule of the agent.
func (s *Server) GetSchedule(ctx context.Context, req gen.GetScheduleRequestObject) (gen.GetScheduleResponseObject, error) {
	sc, err := s.cfg.Store.Schedules.GetSchedule(ctx, principalFrom(ctx).Account.ID, req.AgentId, req.ScheduleId)
	if err != nil {
		return nil, err
	}
	return gen.GetSchedule200JSONResponse{Body: gen.ScheduleEnvelope{Success: true, Data: scheduleOut(sc)}}, nil
}

// UpdateSchedule replaces the members present in the body.
func (s *Server) UpdateSchedule(ctx context.Context, req gen.UpdateScheduleRequestObject) (gen.UpdateScheduleResponseObject, error) {
	b := req.Body
	c := domain.ScheduleChanges{Cron: b.Cron, Timezone: b.Timezone, Text: b.Text, UserID: b.UserId, Enabled: b.Enabled,
		Name: clearable(b.Name), RoomID: clearable(b.RoomId)}
	if b.At != nil {
		at, err := scheduleAt(b.At)
		if err != nil {
			return nil, err
		}
		c.At = &at
	}
	if b.Target.IsSpecified() {
		var target *domain.ScheduleTarget
		if !b.Target.IsNull() {
			t := b.Target.MustGet()
			target = scheduleTarget(&t)
		}
		c.Target = &target
	}
	sc, err := s.cfg.Store.Schedules.UpdateSchedule(ctx, principalFrom(ctx).Account.ID, req.AgentId, req.ScheduleId, c)
	if err != nil {
		return nil, err
	}
	return gen.UpdateSchedule200JSONResponse{Body: gen.ScheduleEnvelope{Success: true, Data: scheduleOut(sc)}}, nil
}

// DeleteSchedule deletes a schedule; a run it made goes on.
func (s *Server) DeleteSchedule(ctx context.Context, req gen.DeleteScheduleRequestObject) (gen.DeleteScheduleResponseObject, error) {
	if err := s.cfg.Store.Schedules.DeleteSchedule(ctx, principalFrom(ctx).Account.ID, req.AgentId, req.ScheduleId); err != nil {
		return nil, err
	}
	return gen.DeleteSchedule200JSONResponse{Body: gen.ScheduleDeletedEnvelope{Success: true,
		Data: gen.ScheduleDeleted{Id: req.ScheduleId, DeletedAt: timestamp(time.Now())}}}, nil
}

// scheduleAt reads a one-off's time (zero when absent); the store checks
// that it lies ahead.
func scheduleAt(at *gen.ScheduleAt) (time.Time, error) {
	if at == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *at)
	if err != nil {
		return time.Time{}, invalidRequest("at", "must be an RFC 3339 date-time")
	}
	return t, checkYears("at", t, firstShownYear)
}

// clearable reads a member null clears: nil when absent, a pointer to ""
// when null.
func clearable[T ~string](v nullable.Nullable[T]) *string {
	if !v.IsSpecified() {
		return nil
	}
	s := ""
	if !v.IsNull() {
		s = string(v.MustGet())
	}
	return &s
}

func scheduleTarget(t *gen.ScheduleTarget) *domain.ScheduleTarget {
	if t == nil {
		return nil
	}
	return &domain.ScheduleTarget{Platform: string(t.Platform), ChatID: t.ChatId}
}

// scheduleOut renders a schedule as the contract's Schedule.
func scheduleOut(sc domain.Schedule) gen.Schedule {
	out := gen.Schedule{Id: sc.ID, AgentId: sc.AgentID, Name: nullString(sc.Name), Cron: nullString(sc.Cron),
		At: nullTime(sc.At), Timezone: sc.Timezone, Text: sc.Text, UserId: sc.UserID, RoomId: nullString(sc.RoomID),
		Target: nullable.NewNullNullable[gen.ScheduleTarget](), Enabled: sc.Enabled, NextRunAt: nullTime(sc.NextRunAt),
		LastRunAt: nullTime(sc.LastRunAt), LastRunId: nullString(sc.LastRunID), LastError: nullString(sc.LastError),
		CreatedAt: timestamp(sc.CreatedAt), UpdatedAt: timestamp(sc.UpdatedAt)}
	if t := sc.Target; t != nil {
		out.Target.Set(gen.ScheduleTarget{Platform: gen.SchedulePlatform(t.Platform), ChatId: t.ChatID})
	}
	return out
}
