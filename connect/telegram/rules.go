package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/turn"
	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// maxMessage is Telegram's limit on a message's length.
const maxMessage = 4096

// typingEvery renews the typing indicator, which Telegram shows for five
// seconds or until the bot's message arrives.
const typingEvery = 4 * time.Second

// helpText answers /help.
const helpText = "Talk to me in a private chat, or in a group mention me or reply to me.\n" +
	"/start - say hello\n/help - this help\n/reset - forget our conversation (group admins only in groups)"

// inbound returns the update as a message to answer, and false when it is
// not to be answered: not a text message, from a bot, in a group not
// addressed to the bot, or refused by allowedUsers or userRateLimit. A
// press of a button is taken too, for Conn.Press to judge.
func (s *session) inbound(u models.Update) (connect.Inbound, bool) {
	if q := u.CallbackQuery; q != nil {
		payload, err := json.Marshal(q)
		return connect.PressInbound(q.ID, strconv.FormatInt(q.From.ID, 10), payload), err == nil
	}
	m := u.Message
	if m == nil || m.From == nil || m.From.IsBot || m.Text == "" {
		return connect.Inbound{}, false // never itself nor another bot
	}
	private := m.Chat.Type == models.ChatTypePrivate
	cmd, _, addressed := s.command(m)
	if !private && !s.inGroups(m.Chat) {
		return connect.Inbound{}, false
	}
	if !private && !s.repliesToMe(m) && !s.mentionsMe(m) && !(addressed && s.respondToCommands()) {
		return connect.Inbound{}, false
	}
	if cmd != "" && !addressed {
		return connect.Inbound{}, false
	}
	chat := strconv.FormatInt(m.Chat.ID, 10)
	if !s.c.Admit(sender(m.From), private, chat) {
		return connect.Inbound{}, false
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return connect.Inbound{}, false
	}
	return connect.Inbound{ID: chat + ":" + strconv.Itoa(m.ID), Chat: chat, Payload: payload}, true
}

func (s *session) respondToCommands() bool {
	return s.settings.RespondToCommands == nil || *s.settings.RespondToCommands
}

// answer answers a message taken by inbound: /help, /reset, and /start
// when the character has a greeting, with a text of their own; anything
// else with the agent's turn. A press goes to press.
func (s *session) answer(ctx context.Context, in connect.Inbound) {
	if connect.IsPress(in) {
		s.press(ctx, in)
		return
	}
	var m models.Message
	if err := json.Unmarshal(in.Payload, &m); err != nil {
		s.c.Logger.Warn("telegram message unreadable", "error", err)
		return
	}
	private := m.Chat.Type == models.ChatTypePrivate
	if private {
		s.c.NoteContact(ctx, sender(m.From))
	}
	cmd, args, _ := s.command(&m)
	conv := domain.ConversationRef{RoomID: "telegram:" + in.Chat}
	if private {
		conv = domain.ConversationRef{UserID: "telegram:" + strconv.FormatInt(m.From.ID, 10)}
	}
	req := turn.Input{Text: m.Text, Conv: conv, UserID: "telegram:" + strconv.FormatInt(m.From.ID, 10),
		UserName: displayName(m.From), Channel: channelOf(m.Chat)}
	out := s.replyTo(&m)
	switch cmd {
	case "start":
		if text := s.greeting(); text != "" {
			s.c.AnswerText(ctx, in, text, out)
			return
		}
		req.Text = "(The user has just opened the chat with /start. Greet them in your voice.)"
	case "help":
		s.c.AnswerText(ctx, in, helpText, out)
		return
	case "reset":
		text, err := s.reset(ctx, &m, private, conv)
		if err != nil {
			s.c.Unanswered(ctx, in.Chat, err)
			return
		}
		s.c.AnswerText(ctx, in, text, out)
		return
	case "":
	default:
		if req.Text = args; args == "" {
			req.Text = "/" + cmd
		}
	}
	s.c.Answer(ctx, in, req, out)
}

// replyTo is how an answer to m is sent: in parts of at most 4,096
// characters, only the first quoting m, with m's chat shown the bot typing
// while the turn works, and the admins asked in private when its run
// waits for decisions.
func (s *session) replyTo(m *models.Message) connect.Reply {
	r := s.chatReply(strconv.FormatInt(m.Chat.ID, 10))
	r.Typing, r.TypingEvery = func(ctx context.Context) { s.typing(ctx, m) }, typingEvery
	r.Send = s.sendPart(m.Chat.ID, &models.ReplyParameters{MessageID: m.ID, AllowSendingWithoutReply: true})
	return r
}

// chatReply is how an answer goes to chat (a chat id) when no message of
// it is answered (a schedule's reply): nothing quoted, no typing shown.
func (s *session) chatReply(chat string) connect.Reply {
	return connect.Reply{Limit: maxMessage, Ask: s.ask, Send: s.sendPart(chat, nil)}
}

// sendPart sends the parts of an answer to chat (an id, as a number or a
// string), the first quoting the message quote names when it is set. A
// failure is logged and returned with the token redacted.
func (s *session) sendPart(chat any, quote *models.ReplyParameters) func(ctx context.Context, i int, part string) error {
	return func(ctx context.Context, i int, part string) error {
		p := &bot.SendMessageParams{ChatID: chat, Text: part}
		if i == 0 {
			p.ReplyParameters = quote
		}
		err := s.send(ctx, p)
		if err != nil {
			err = redact(err, s.b.Token())
			s.c.Logger.WarnContext(ctx, "telegram reply not sent", "chat", chat, "error", err)
		}
		return err
	}
}

// ask sends an admin, in their private chat (whose id is the user's),
// an approval message with its buttons as an inline keyboard.
func (s *session) ask(ctx context.Context, a connect.Ask) error {
	row := make([]button, len(a.Buttons))
	for i, b := range a.Buttons {
		row[i] = button{Text: b.Label, CallbackData: b.Data}
	}
	err := s.send(ctx, &bot.SendMessageParams{ChatID: a.Admin, Text: a.Text, ReplyMarkup: keyboard{InlineKeyboard: [][]button{row}}})
	if err != nil {
		s.c.Logger.WarnContext(ctx, "telegram approval message not sent", "admin", a.Admin, "error", redact(err, s.b.Token()))
	}
	return err
}

// keyboard is an inline keyboard of callback buttons, in the Bot API's
// shape: models.InlineKeyboardButton always sends an empty copy_text,
// which Telegram refuses (BUTTON_COPY_TEXT_INVALID).
type keyboard struct {
	InlineKeyboard [][]button `json:"inline_keyboard"`
}

type button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// press answers a press of an approval button, taken by inbound: the
// decision is Conn.Press's, answered to the one who pressed
// (answerCallbackQuery), and when it decided the call the approval
// message is edited to say so, its buttons gone.
func (s *session) press(ctx context.Context, in connect.Inbound) {
	var q models.CallbackQuery
	if err := json.Unmarshal(in.Payload, &q); err != nil {
		s.c.Logger.Warn("telegram button press unreadable", "error", err)
		return
	}
	msg := q.Message.Message // nil when the message is too old for the bot to see
	text := ""
	if msg != nil {
		text = msg.Text
	}
	out := s.c.Press(ctx, sender(&q.From), q.Data, text)
	callCtx, cancel := context.WithTimeout(ctx, connect.CallTimeout)
	defer cancel()
	if _, err := s.b.AnswerCallbackQuery(callCtx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID, Text: out.Notice}); err != nil {
		s.c.Logger.WarnContext(ctx, "telegram button press not answered", "error", redact(err, s.b.Token()))
	}
	if out.Edit == "" || msg == nil {
		return
	}
	// Without reply_markup the edit removes the buttons.
	if _, err := s.b.EditMessageText(callCtx, &bot.EditMessageTextParams{ChatID: msg.Chat.ID, MessageID: msg.ID, Text: out.Edit}); err != nil {
		s.c.Logger.WarnContext(ctx, "telegram approval message not edited", "error", redact(err, s.b.Token()))
	}
}

// typing shows m's chat (its topic, in a forum) the bot typing once; a
// failure only loses the indicator.
func (s *session) typing(ctx context.Context, m *models.Message) {
	ctx, cancel := context.WithTimeout(ctx, connect.CallTimeout)
	defer cancel()
	_, err := s.b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: m.Chat.ID, MessageThreadID: m.MessageThreadID,
		Action: models.ChatActionTyping})
	if err != nil && ctx.Err() == nil {
		s.c.Logger.DebugContext(ctx, "telegram typing indicator", "chat", m.Chat.ID, "error", redact(err, s.b.Token()))
	}
}

// reset forgets the chat's conversation; in groups only for admin users.
func (s *session) reset(ctx context.Context, m *models.Message, private bool, conv domain.ConversationRef) (string, error) {
	if !private && !s.c.IsAdmin(sender(m.From)) {
		return "Only the bot's admins can reset a group's conversation.", nil
	}
	if err := s.c.Forget(ctx, conv); err != nil {
		return "", err
	}
	return "I have forgotten our conversation.", nil
}

// sender is u as settings name users.
func sender(u *models.User) connect.Sender {
	return connect.Sender{ID: strconv.FormatInt(u.ID, 10), Username: u.Username}
}

// greeting is the character's first greeting template, "" when it has none.
func (s *session) greeting() string {
	var t struct {
		Greeting json.RawMessage `json:"greeting"`
	}
	_, _ = s.c.Agent.Fields.Decode("messageTemplates", &t) // a template of another shape means none
	var many []string
	if json.Unmarshal(t.Greeting, &many) == nil && len(many) > 0 {
		return many[0]
	}
	var one string
	_ = json.Unmarshal(t.Greeting, &one)
	return one
}

// command returns the bot command at the start of m (without its slash and
// @username), its argument text, and whether it is addressed to this bot
// (no @username, or this bot's).
func (s *session) command(m *models.Message) (cmd, args string, addressed bool) {
	for _, e := range m.Entities {
		if e.Type != models.MessageEntityTypeBotCommand || e.Offset != 0 {
			continue
		}
		word := utf16Slice(m.Text, e.Offset, e.Length)
		name, target, _ := strings.Cut(strings.TrimPrefix(word, "/"), "@")
		args = strings.TrimSpace(utf16Slice(m.Text, e.Offset+e.Length, -1))
		return strings.ToLower(name), args, target == "" || strings.EqualFold(target, s.me.Username)
	}
	return "", "", false
}

func (s *session) mentionsMe(m *models.Message) bool {
	for _, e := range m.Entities {
		switch {
		case e.Type == models.MessageEntityTypeMention &&
			strings.EqualFold(utf16Slice(m.Text, e.Offset, e.Length), "@"+s.me.Username):
			return true
		case e.Type == models.MessageEntityTypeTextMention && e.User != nil && e.User.ID == s.me.ID:
			return true
		}
	}
	return false
}

func (s *session) repliesToMe(m *models.Message) bool {
	r := m.ReplyToMessage
	return r != nil && r.From != nil && r.From.ID == s.me.ID
}

// inGroups reports whether chat is allowed by groupIds (all are when it is
// empty); entries are chat ids or @usernames.
func (s *session) inGroups(chat models.Chat) bool {
	if len(s.settings.GroupIDs) == 0 {
		return true
	}
	for _, g := range s.settings.GroupIDs {
		g = strings.TrimSpace(g)
		if g == strconv.FormatInt(chat.ID, 10) || (chat.Username != "" && strings.EqualFold(g, "@"+chat.Username)) {
			return true
		}
	}
	return false
}

func channelOf(chat models.Chat) string {
	if chat.Title != "" {
		return chat.Title
	}
	return string(chat.Type)
}

// send sends one message, waiting out a 429's retry_after (twice at most).
func (s *session) send(ctx context.Context, p *bot.SendMessageParams) error {
	for attempt := 0; ; attempt++ {
		callCtx, cancel := context.WithTimeout(ctx, connect.CallTimeout)
		_, err := s.b.SendMessage(callCtx, p)
		cancel()
		var tooMany *bot.TooManyRequestsError
		if !errors.As(err, &tooMany) || attempt == 2 {
			return err
		}
		if !connect.Sleep(ctx, time.Duration(max(tooMany.RetryAfter, 1))*time.Second) {
			return fmt.Errorf("telegram: send: %w", ctx.Err())
		}
	}
}

// utf16Slice returns the part of s at offset with length in UTF-16 code
// units, as Telegram counts entity offsets; length -1 means to the end.
func utf16Slice(s string, offset, length int) string {
	u := utf16.Encode([]rune(s))
	if offset > len(u) {
		return ""
	}
	end := len(u)
	if length >= 0 {
		end = min(offset+length, len(u))
	}
	return string(utf16.Decode(u[offset:end]))
}

// displayName is how Telegram shows u: first and last name, else
// @username.
func displayName(u *models.User) string {
	if name := strings.TrimSpace(u.FirstName + " " + u.LastName); name != "" {
		return name
	}
	if u.Username != "" {
		return "@" + u.Username
	}
	return ""
}
