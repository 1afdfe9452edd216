package a2a

import (
	"encoding/json"

	"github.com/agentd/agentd/domain"
)

// The shapes of A2A 0.3 (its JSON schema: objects told apart by `kind`,
// lowercase states and roles), for the methods message/send,
// message/stream and tasks/get.

// legacyMessage is a message of A2A 0.3.
type legacyMessage struct {
	Kind      string          `json:"kind"`
	MessageID string          `json:"messageId"`
	ContextID string          `json:"contextId,omitempty"`
	TaskID    string          `json:"taskId,omitempty"`
	Role      string          `json:"role"`
	Parts     []legacyPart    `json:"parts"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// legacyPart is a part of A2A 0.3: kind text, file or data.
type legacyPart struct {
	Kind string          `json:"kind"`
	Text *string         `json:"text,omitempty"`
	File json.RawMessage `json:"file,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

func legacyText(text string) legacyPart { return legacyPart{Kind: "text", Text: &text} }

// legacyTask is a task of A2A 0.3.
type legacyTask struct {
	Kind      string           `json:"kind"`
	ID        string           `json:"id"`
	ContextID string           `json:"contextId"`
	Status    legacyStatus     `json:"status"`
	Artifacts []legacyArtifact `json:"artifacts,omitempty"`
	History   []legacyMessage  `json:"history,omitempty"`
}

type legacyStatus struct {
	State     string         `json:"state"`
	Message   *legacyMessage `json:"message,omitempty"`
	Timestamp string         `json:"timestamp,omitempty"`
}

type legacyArtifact struct {
	ArtifactID string       `json:"artifactId"`
	Name       string       `json:"name,omitempty"`
	Parts      []legacyPart `json:"parts"`
}

// legacyStatusUpdate is 0.3's status-update event; Final ends a stream.
type legacyStatusUpdate struct {
	Kind      string       `json:"kind"`
	TaskID    string       `json:"taskId"`
	ContextID string       `json:"contextId"`
	Status    legacyStatus `json:"status"`
	Final     bool         `json:"final"`
}

// legacyArtifactUpdate is 0.3's artifact-update event.
type legacyArtifactUpdate struct {
	Kind      string         `json:"kind"`
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  legacyArtifact `json:"artifact"`
	Append    bool           `json:"append"`
	LastChunk bool           `json:"lastChunk"`
}

// legacySendParams are the params of message/send and message/stream.
type legacySendParams struct {
	Message       *legacyMessage `json:"message"`
	Configuration *struct {
		AcceptedOutputModes    []string        `json:"acceptedOutputModes"`
		HistoryLength          *int            `json:"historyLength"`
		PushNotificationConfig json.RawMessage `json:"pushNotificationConfig"`
		Blocking               *bool           `json:"blocking"`
	} `json:"configuration"`
}

// v03 speaks A2A 0.3.
type v03 struct{}

func (v03) parseSend(raw json.RawMessage) (sendRequest, *rpcError) {
	var p legacySendParams
	if err := decodeParams(raw, &p); err != nil {
		return sendRequest{}, err
	}
	if p.Message == nil {
		return sendRequest{}, invalidParams("message is required")
	}
	m := p.Message
	if m.Role != "user" {
		return sendRequest{}, invalidParams("message.role must be user")
	}
	text, err := partsText(m.Parts, func(p legacyPart) (string, bool) {
		switch {
		case p.Kind == "text" && p.Text != nil:
			return *p.Text, true
		case p.Kind == "data" && len(p.Data) > 0:
			return compactJSON(p.Data), true
		}
		return "", false
	})
	if err != nil {
		return sendRequest{}, err
	}
	req := sendRequest{MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID, Text: text,
		AskDepth: askDepthOf(m.Metadata)}
	if c := p.Configuration; c != nil {
		req.HistoryLength, req.OutputModes = c.HistoryLength, c.AcceptedOutputModes
		req.Push = isSet(c.PushNotificationConfig)
		req.Immediate = c.Blocking != nil && !*c.Blocking
	}
	return req, nil
}

func (v03) parseGet(raw json.RawMessage) (getRequest, *rpcError) { return v1{}.parseGet(raw) }

func (v v03) sendResult(t domain.A2ATask, historyLength *int) any { return v.task(t, historyLength) }

func (v v03) getResult(t domain.A2ATask, historyLength *int) any { return v.task(t, historyLength) }

func (v03) task(t domain.A2ATask, historyLength *int) legacyTask {
	out := legacyTask{Kind: "task", ID: t.ID, ContextID: t.ContextID, Status: legacyTaskStatus(t)}
	if t.State == domain.A2ATaskCompleted {
		out.Artifacts = []legacyArtifact{{ArtifactID: replyArtifactID, Name: replyArtifactID, Parts: []legacyPart{legacyText(t.ReplyText)}}}
	}
	for _, m := range keepLast(history(t), historyLength) {
		out.History = append(out.History, legacyMessageOf(m))
	}
	return out
}

func (v v03) started(t domain.A2ATask) any { return v.task(t, nil) }

func (v03) chunk(t domain.A2ATask, text string, appended, last bool) any {
	return legacyArtifactUpdate{Kind: "artifact-update", TaskID: t.ID, ContextID: t.ContextID,
		Artifact: legacyArtifact{ArtifactID: replyArtifactID, Name: replyArtifactID, Parts: []legacyPart{legacyText(text)}},
		Append:   appended, LastChunk: last}
}

func (v03) finished(t domain.A2ATask) any {
	return legacyStatusUpdate{Kind: "status-update", TaskID: t.ID, ContextID: t.ContextID, Status: legacyTaskStatus(t), Final: true}
}

// errorData is the 0.3 error's data: an object with agentd's code and the
// details.
func (v03) errorData(e *rpcError) any {
	if e.Reason == "" {
		return nil
	}
	data := map[string]string{"reason": e.Reason}
	for k, v := range e.Metadata {
		data[k] = v
	}
	return data
}

// legacyStates are the 0.3 names of a task's states.
var legacyStates = map[domain.A2ATaskState]string{
	domain.A2ATaskWorking:   "working",
	domain.A2ATaskCompleted: "completed",
	domain.A2ATaskFailed:    "failed",
}

func legacyTaskStatus(t domain.A2ATask) legacyStatus {
	s := legacyStatus{State: legacyStates[t.State], Timestamp: timestamp(t.UpdatedAt)}
	if t.State == domain.A2ATaskFailed {
		m := legacyMessageOf(failure(t))
		s.Message = &m
	}
	return s
}

func legacyMessageOf(m message) legacyMessage {
	role := "user"
	if m.agent {
		role = "agent"
	}
	return legacyMessage{Kind: "message", MessageID: m.id, ContextID: m.task.ContextID, TaskID: m.task.ID, Role: role,
		Parts: []legacyPart{legacyText(m.text)}}
}
