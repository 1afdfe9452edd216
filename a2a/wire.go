package a2a

import (
	"encoding/json"
	"time"

	"github.com/agentd/agentd/domain"
)

// The shapes of A2A 1.0 (specification/a2a.proto in ProtoJSON: camelCase
// members, enums by their names), as far as agentd reads or writes them.

// Message is a message of A2A 1.0.
type Message struct {
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Role             string          `json:"role"`
	Parts            []Part          `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

// The roles of A2A 1.0.
const (
	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// Part is one part of a message or artifact: one of Text, Raw, URL or Data.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       json.RawMessage `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// textPart is a part holding text.
func textPart(text string) Part { return Part{Text: &text} }

// Task is a task of A2A 1.0.
type Task struct {
	ID        string     `json:"id"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
	History   []Message  `json:"history,omitempty"`
}

// TaskStatus is a task's state, with the agent's message about it.
type TaskStatus struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is an output of a task: the reply.
type Artifact struct {
	ArtifactID string `json:"artifactId"`
	Name       string `json:"name,omitempty"`
	Parts      []Part `json:"parts"`
}

// SendMessageResponse is the result of SendMessage: always a task.
type SendMessageResponse struct {
	Task *Task `json:"task,omitempty"`
}

// StreamResponse is one event of SendStreamingMessage, one member set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// TaskStatusUpdateEvent tells a task's new status.
type TaskStatusUpdateEvent struct {
	TaskID    string     `json:"taskId"`
	ContextID string     `json:"contextId"`
	Status    TaskStatus `json:"status"`
}

// TaskArtifactUpdateEvent carries a fragment of the reply.
type TaskArtifactUpdateEvent struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append"`
	LastChunk bool     `json:"lastChunk"`
}

// sendParams are the params of SendMessage and SendStreamingMessage.
type sendParams struct {
	Message       *Message `json:"message"`
	Configuration *struct {
		AcceptedOutputModes        []string        `json:"acceptedOutputModes"`
		HistoryLength              *int            `json:"historyLength"`
		ReturnImmediately          bool            `json:"returnImmediately"`
		TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig"`
	} `json:"configuration"`
}

// getParams are the params of GetTask and CancelTask.
type getParams struct {
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength"`
}

// replyArtifactID names the artifact holding the reply, in every task.
const replyArtifactID = "reply"

// v1 speaks A2A 1.0.
type v1 struct{}

func (v1) parseSend(raw json.RawMessage) (sendRequest, *rpcError) {
	var p sendParams
	if err := decodeParams(raw, &p); err != nil {
		return sendRequest{}, err
	}
	if p.Message == nil {
		return sendRequest{}, invalidParams("message is required")
	}
	m := p.Message
	if m.Role != RoleUser {
		return sendRequest{}, invalidParams("message.role must be " + RoleUser)
	}
	text, err := partsText(m.Parts, func(p Part) (string, bool) {
		switch {
		case p.Text != nil:
			return *p.Text, true
		case len(p.Data) > 0:
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
		req.Push = isSet(c.TaskPushNotificationConfig)
		req.Immediate = c.ReturnImmediately
	}
	return req, nil
}

func (v1) parseGet(raw json.RawMessage) (getRequest, *rpcError) {
	var p getParams
	if err := decodeParams(raw, &p); err != nil {
		return getRequest{}, err
	}
	if p.ID == "" {
		return getRequest{}, invalidParams("id is required")
	}
	return getRequest(p), nil
}

func (v v1) sendResult(t domain.A2ATask, historyLength *int) any {
	task := v.task(t, historyLength)
	return SendMessageResponse{Task: &task}
}

func (v v1) getResult(t domain.A2ATask, historyLength *int) any { return v.task(t, historyLength) }

func (v1) task(t domain.A2ATask, historyLength *int) Task {
	out := Task{ID: t.ID, ContextID: t.ContextID, Status: v1Status(t)}
	if t.State == domain.A2ATaskCompleted {
		out.Artifacts = []Artifact{{ArtifactID: replyArtifactID, Name: replyArtifactID, Parts: []Part{textPart(t.ReplyText)}}}
	}
	for _, m := range keepLast(history(t), historyLength) {
		out.History = append(out.History, v1Message(m))
	}
	return out
}

func (v v1) started(t domain.A2ATask) any {
	task := v.task(t, nil)
	return StreamResponse{Task: &task}
}

func (v1) chunk(t domain.A2ATask, text string, appended, last bool) any {
	return StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: t.ID, ContextID: t.ContextID,
		Artifact: Artifact{ArtifactID: replyArtifactID, Name: replyArtifactID, Parts: []Part{textPart(text)}},
		Append:   appended, LastChunk: last}}
}

func (v1) finished(t domain.A2ATask) any {
	return StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{TaskID: t.ID, ContextID: t.ContextID, Status: v1Status(t)}}
}

// errorData is the 1.0 error's data: a google.rpc.ErrorInfo.
func (v1) errorData(e *rpcError) any {
	if e.Reason == "" {
		return nil
	}
	return []errorInfo{{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: e.Reason, Domain: e.Domain, Metadata: e.Metadata}}
}

// errorInfo is google.rpc.ErrorInfo in ProtoJSON's Any form.
type errorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// v1States are the 1.0 names of a task's states.
var v1States = map[domain.A2ATaskState]string{
	domain.A2ATaskWorking:   "TASK_STATE_WORKING",
	domain.A2ATaskCompleted: "TASK_STATE_COMPLETED",
	domain.A2ATaskFailed:    "TASK_STATE_FAILED",
}

// v1Status is a task's status; a failed one carries the reason as the
// agent's message.
func v1Status(t domain.A2ATask) TaskStatus {
	s := TaskStatus{State: v1States[t.State], Timestamp: timestamp(t.UpdatedAt)}
	if t.State == domain.A2ATaskFailed {
		m := v1Message(failure(t))
		s.Message = &m
	}
	return s
}

func v1Message(m message) Message {
	role := RoleUser
	if m.agent {
		role = RoleAgent
	}
	return Message{MessageID: m.id, ContextID: m.task.ContextID, TaskID: m.task.ID, Role: role, Parts: []Part{textPart(m.text)}}
}

// timestamp is t as A2A writes times: RFC 3339 in UTC with milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
