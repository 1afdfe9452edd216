package discord

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/agentd/agentd/connect"
	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/turn"
	"github.com/bwmarrin/discordgo"
)

// maxMessage is Discord's limit on a message's length.
const maxMessage = 2000

// typingEvery renews the typing indicator, which Discord shows for about
// ten seconds.
const typingEvery = 8 * time.Second

// handle decides, on the gateway's reader, whether m may be answered, and
// takes it into the connection's inbox, in its channel's line. The channel
// filter may need a REST call, so it runs in the job.
func (s *session) handle(m *discordgo.Message) {
	me := s.me.Load()
	if m.Author == nil || m.Author.Bot || me == nil || m.Author.ID == me.ID || m.WebhookID != "" {
		return // never itself nor another bot
	}
	if (m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply) || strings.TrimSpace(m.Content) == "" {
		return // joins, pins and other system messages; attachments alone
	}
	dm := m.GuildID == ""
	if dm && !enabled(s.settings.RespondToDMs) {
		return
	}
	if !dm && enabled(s.settings.RespondToMentions) && !mentions(m, me.ID) && !repliesTo(m, me.ID) {
		return
	}
	if !s.c.Admit(connect.Sender{ID: m.Author.ID, Username: m.Author.Username}, dm, m.ChannelID) {
		return
	}
	payload, err := json.Marshal(m)
	if err == nil {
		err = s.c.Take(s.ctx, "", []connect.Inbound{{ID: m.ID, Chat: m.ChannelID, Payload: payload}}, s.answer)
	}
	if err != nil && s.ctx.Err() == nil {
		s.c.Logger.Warn("discord message not taken", "channel", m.ChannelID, "error", err)
	}
}

// enabled reads a setting that defaults to true.
func enabled(b *bool) bool { return b == nil || *b }

func mentions(m *discordgo.Message, id string) bool {
	for _, u := range m.Mentions {
		if u != nil && u.ID == id {
			return true
		}
	}
	return false
}

func repliesTo(m *discordgo.Message, id string) bool {
	r := m.ReferencedMessage
	return r != nil && r.Author != nil && r.Author.ID == id
}

// answer answers a message taken by handle with the agent's turn, in a
// channel settings.channels allows. A press goes to press.
func (s *session) answer(ctx context.Context, in connect.Inbound) {
	if connect.IsPress(in) {
		s.press(ctx, in)
		return
	}
	m := new(discordgo.Message)
	if err := json.Unmarshal(in.Payload, m); err != nil {
		s.c.Logger.Warn("discord message unreadable", "error", err)
		return
	}
	dm := m.GuildID == ""
	name := "direct message"
	if dm {
		s.c.NoteContact(ctx, connect.Sender{ID: m.Author.ID, Username: m.Author.Username})
	} else {
		ch, allowed := s.allowed(ctx, m.ChannelID)
		if !allowed {
			return
		}
		if ch != nil && ch.Name != "" {
			name = "#" + ch.Name
		} else {
			name = m.ChannelID
		}
	}
	user := "discord:" + m.Author.ID
	conv := domain.ConversationRef{RoomID: "discord:" + m.ChannelID}
	if dm {
		conv = domain.ConversationRef{UserID: user}
	}
	req := turn.Input{Text: m.ContentWithMentionsReplaced(), Conv: conv, UserID: user, Channel: name,
		UserName: m.Author.DisplayName()}
	s.c.Answer(ctx, in, req, s.replyTo(m))
}

// allowed reports whether a guild channel may be answered: every channel
// when settings.channels is empty, else those it names by id or name (a
// thread by its parent's). It returns the channel when it is known.
func (s *session) allowed(ctx context.Context, id string) (*discordgo.Channel, bool) {
	want := s.settings.Channels
	ch := s.channel(ctx, id)
	if len(want) == 0 {
		return ch, true
	}
	candidates := []*discordgo.Channel{ch}
	if ch != nil && ch.IsThread() && ch.ParentID != "" {
		candidates = append(candidates, s.channel(ctx, ch.ParentID))
	}
	for _, w := range want {
		w = strings.TrimPrefix(strings.TrimSpace(w), "#")
		if w == id {
			return ch, true
		}
		for _, c := range candidates {
			if c != nil && (w == c.ID || strings.EqualFold(w, c.Name)) {
				return ch, true
			}
		}
	}
	return ch, false
}

// channel returns the channel id from the gateway's guilds, else fetched
// once through the API; nil when it cannot be had.
func (s *session) channel(ctx context.Context, id string) *discordgo.Channel {
	if ch, err := s.dg.State.Channel(id); err == nil {
		return ch
	}
	s.chanMu.Lock()
	ch, ok := s.channels[id]
	s.chanMu.Unlock()
	if ok {
		return ch
	}
	ch, err := s.dg.Channel(id, discordgo.WithContext(ctx))
	if err != nil {
		s.c.Logger.WarnContext(ctx, "fetch discord channel", "channel", id, "error", err)
		return nil // asked again next time
	}
	s.chanMu.Lock()
	s.channels[id] = ch
	s.chanMu.Unlock()
	return ch
}

// pressed takes a press of a button (an interaction d of type message
// component, on the gateway's reader) into the inbox, for press: who
// pressed is judged there. d is kept as Discord sent it.
func (s *session) pressed(i *discordgo.Interaction, d json.RawMessage) {
	if i.Type != discordgo.InteractionMessageComponent {
		return
	}
	user := i.User // in a DM; in a guild, the member's
	if user == nil && i.Member != nil {
		user = i.Member.User
	}
	if user == nil {
		return
	}
	err := s.c.Take(s.ctx, "", []connect.Inbound{connect.PressInbound(i.ID, user.ID, d)}, s.answer)
	if err != nil && s.ctx.Err() == nil {
		s.c.Logger.Warn("discord button press not taken", "error", err)
	}
}

// press answers a press of an approval button, taken by pressed: the
// decision is Conn.Press's. Discord wants an answer within 3 seconds: one
// that decided the call updates the approval message to say so, its
// buttons gone; any other answers the one who pressed alone.
func (s *session) press(ctx context.Context, in connect.Inbound) {
	i := new(discordgo.Interaction)
	if err := json.Unmarshal(in.Payload, i); err != nil {
		s.c.Logger.Warn("discord button press unreadable", "error", err)
		return
	}
	user := i.User
	if user == nil {
		user = i.Member.User // pressed made sure one of them is there
	}
	text := ""
	if i.Message != nil {
		text = i.Message.Content
	}
	out := s.c.Press(ctx, connect.Sender{ID: user.ID, Username: user.Username}, i.MessageComponentData().CustomID, text)
	resp := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: out.Notice, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions}}
	if out.Edit != "" {
		resp = &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
			Data: &discordgo.InteractionResponseData{Content: out.Edit, Components: []discordgo.MessageComponent{}, AllowedMentions: noMentions}}
	}
	if err := s.dg.InteractionRespond(i, resp, discordgo.WithContext(ctx), discordgo.WithRestRetries(0)); err != nil {
		s.c.Logger.WarnContext(ctx, "discord button press not answered", "error", err)
	}
}

// noMentions pings nobody: an approval message quotes the model's
// arguments, which may say @everyone.
var noMentions = &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}

// ask sends an admin, in a DM (opened, or found, by the user's id), an
// approval message with its buttons as message components.
func (s *session) ask(ctx context.Context, a connect.Ask) error {
	row := discordgo.ActionsRow{}
	for _, b := range a.Buttons {
		style := discordgo.DangerButton
		if b.Approve {
			style = discordgo.SuccessButton
		}
		row.Components = append(row.Components, discordgo.Button{Label: b.Label, Style: style, CustomID: b.Data})
	}
	dm, err := s.dg.UserChannelCreate(a.Admin, discordgo.WithContext(ctx))
	if err == nil {
		_, err = s.dg.ChannelMessageSendComplex(dm.ID, &discordgo.MessageSend{Content: a.Text,
			Components: []discordgo.MessageComponent{row}, AllowedMentions: noMentions},
			discordgo.WithContext(ctx), discordgo.WithRestRetries(0))
	}
	if err != nil {
		s.c.Logger.WarnContext(ctx, "discord approval message not sent", "admin", a.Admin, "error", err)
	}
	return err
}

// sendTyping shows the typing indicator once; a failure only loses it.
func (s *session) sendTyping(ctx context.Context, channel string) {
	if err := s.dg.ChannelTyping(channel, discordgo.WithContext(ctx)); err != nil && ctx.Err() == nil {
		s.c.Logger.DebugContext(ctx, "discord typing indicator", "channel", channel, "error", err)
	}
}

// replyTo is how an answer to m is sent: in parts of at most 2,000
// characters, the first referencing m, with the typing indicator on while
// the turn works, and the admins asked in a DM when its run waits for
// decisions. Only users are pinged: a reply never mentions @everyone
// or a role.
func (s *session) replyTo(m *discordgo.Message) connect.Reply {
	f := false
	r := s.chatReply(m.ChannelID)
	r.Typing, r.TypingEvery = func(ctx context.Context) { s.sendTyping(ctx, m.ChannelID) }, typingEvery
	r.Send = s.sendPart(m.ChannelID, &discordgo.MessageReference{MessageID: m.ID, ChannelID: m.ChannelID, GuildID: m.GuildID, FailIfNotExists: &f})
	return r
}

// chatReply is how an answer goes to channel when no message of it is
// answered (a schedule's reply): nothing referenced, no typing shown.
func (s *session) chatReply(channel string) connect.Reply {
	return connect.Reply{Limit: maxMessage, Ask: s.ask, Send: s.sendPart(channel, nil)}
}

// sendPart sends the parts of an answer to channel, the first referencing
// the message ref names when it is set. A failure is logged and returned.
func (s *session) sendPart(channel string, ref *discordgo.MessageReference) func(ctx context.Context, i int, part string) error {
	return func(ctx context.Context, i int, part string) error {
		msg := &discordgo.MessageSend{Content: part,
			AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}, RepliedUser: true}}
		if i == 0 {
			msg.Reference = ref
		}
		// No retry after a 5xx: Discord may have posted the message and
		// lost only its answer, and a reply must not appear twice.
		_, err := s.dg.ChannelMessageSendComplex(channel, msg, discordgo.WithContext(ctx), discordgo.WithRestRetries(0))
		if err != nil {
			s.c.Logger.WarnContext(ctx, "discord reply not sent", "channel", channel, "error", err)
		}
		return err
	}
}
