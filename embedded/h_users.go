package embedded

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"math"
	"sort"
	"unicode"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// maxUsers bounds the user id space.
const maxUsers = 1 << 20

// login serves Register (operation 1): LOGIN_REGISTER or
// LOGIN_REGISTER_WITH_PAT (§1.10, §3.2). Every refusal is an eviction.
func (s *Server) login(c *conn, r *request) outcome {
	var vi iggy.ClientVersionInfo
	if _, err := vi.DecodeFrom(r.body); err != nil {
		return evictWith(iggy.EvictionReasonMalformedLogin)
	}
	if !s.proto.Accepts(iggy.ProtocolVersion(vi.ProtocolVersion)) {
		return evictWith(iggy.EvictionReasonIncompatibleProtocol)
	}
	// Username/password first, then a token (the body shapes are not
	// tagged on the wire). At 0.12 both carry a bind secret.
	var up iggy.LoginRegisterRequest
	var pat iggy.LoginRegisterWithPATRequest
	withPassword := false
	if s.proto.Generation() >= iggy.Protocol012 {
		var up12 iggy.LoginRegisterRequestV12
		var pat12 iggy.LoginRegisterWithPATRequestV12
		if withPassword = decodeBody(&up12, r.body) == nil; withPassword {
			up = iggy.LoginRegisterRequest{VersionInfo: up12.VersionInfo, Username: up12.Username, Password: up12.Password, Context: up12.Context}
		} else if decodeBody(&pat12, r.body) == nil {
			pat = iggy.LoginRegisterWithPATRequest{VersionInfo: pat12.VersionInfo, Token: pat12.Token}
		} else {
			return evictWith(iggy.EvictionReasonMalformedLogin)
		}
	} else {
		withPassword = decodeBody(&up, r.body) == nil
		if !withPassword && decodeBody(&pat, r.body) != nil {
			return evictWith(iggy.EvictionReasonMalformedLogin)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := c.sess; sess != nil && !sess.fenced {
		// Logging in again on a bound connection returns the existing session.
		return s.loginReply(c, sess)
	}
	var u *user
	if withPassword {
		if n := len(up.Username); n < iggy.LimitLoginUsernameMinLength || n > iggy.LimitLoginUsernameMaxLength {
			return evictWith(iggy.EvictionReasonInvalidCredentials)
		}
		if n := len(up.Password); n < iggy.LimitLoginPasswordMinLength || n > iggy.LimitLoginPasswordMaxLength {
			return evictWith(iggy.EvictionReasonInvalidCredentials)
		}
		id, ok := s.userByName[up.Username]
		if u = s.users[id]; !ok || u == nil || !u.checkPassword(up.Password) || u.status != iggy.UserStatusActive {
			return evictWith(iggy.EvictionReasonInvalidCredentials)
		}
	} else {
		u = s.userByToken(pat.Token)
		if u == nil {
			return evictWith(iggy.EvictionReasonInvalidToken)
		}
		if u.status != iggy.UserStatusActive {
			return evictWith(iggy.EvictionReasonUserInactive)
		}
	}
	if c.sess != nil { // fenced: replaced by a newer login elsewhere
		s.endSession(c)
	}
	s.commit++
	sess := &session{client: r.h.Client, epoch: s.commit, userID: u.id, conn: c}
	if old := s.sessions[r.h.Client]; old != nil && old.conn != c {
		old.fenced = true
	}
	s.sessions[r.h.Client] = sess
	c.sess = sess
	c.log.Info().Uint32("user_id", u.id).Uint64("session", sess.epoch).
		Str("sdk", vi.SdkName+" "+vi.SdkVersion).Msg("logged in")
	return s.loginReply(c, sess)
}

func (s *Server) loginReply(c *conn, sess *session) outcome {
	out := c.okResult(&iggy.LoginSession{
		UserID:                sess.userID,
		Session:               sess.epoch,
		ServerProtocolVersion: uint32(s.proto),
		ServerVersion:         s.cfg.ServerVersion,
	})
	out.logOp, out.commit = sess.epoch, sess.epoch
	return out
}

// logout serves LOGOUT_USER (operation 3). Called with Server.mu held.
func (s *Server) logout(c *conn, r *request) outcome {
	s.endSession(c)
	return outcome{}
}

// userByToken finds the active, unexpired token raw and returns its user.
// Caller holds Server.mu.
func (s *Server) userByToken(raw string) *user {
	h := hashToken(raw)
	now := s.nowMicros()
	for _, u := range s.users {
		for _, t := range u.tokens {
			if subtle.ConstantTimeCompare([]byte(t.hash), []byte(h)) == 1 {
				if t.expiryAt != 0 && t.expiryAt <= now {
					return nil
				}
				return u
			}
		}
	}
	return nil
}

// newUser builds a user with a salted password hash.
func newUser(id uint32, name, password string, status iggy.UserStatus, perms *iggy.Permissions, now uint64) *user {
	u := &user{id: id, username: name, createdAt: now, status: status, perms: perms, tokens: map[string]*token{}}
	u.setPassword(password)
	return u
}

func (u *user) setPassword(password string) {
	var salt [16]byte
	_, _ = rand.Read(salt[:])
	u.salt = hex.EncodeToString(salt[:])
	u.hash = passwordHash(u.salt, password)
}

func (u *user) checkPassword(password string) bool {
	return subtle.ConstantTimeCompare([]byte(u.hash), []byte(passwordHash(u.salt, password))) == 1
}

func passwordHash(salt, password string) string {
	sum := sha256.Sum256([]byte(salt + "\x00" + password))
	return hex.EncodeToString(sum[:])
}

func hashToken(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// validUsername applies the server's username rule: 3..50 bytes of
// printable, non-space characters.
func validUsername(name string) bool {
	if len(name) < iggy.LimitLoginUsernameMinLength || len(name) > iggy.LimitLoginUsernameMaxLength {
		return false
	}
	for _, r := range name {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func validPassword(p string) bool {
	return len(p) >= iggy.LimitLoginPasswordMinLength && len(p) <= iggy.LimitLoginPasswordMaxLength
}

// userDetails encodes the wire view of a user with its permissions.
func userDetails(u *user) *iggy.UserDetails {
	d := &iggy.UserDetails{UserResponse: userResponse(u)}
	perms := u.perms
	if u.id == rootUserID {
		perms = allPermissions()
	}
	if perms != nil {
		d.Permissions = &iggy.SizedPermissions{Permissions: *perms}
	}
	return d
}

func userResponse(u *user) iggy.UserResponse {
	return iggy.UserResponse{ID: u.id, CreatedAt: u.createdAt, Status: u.status, Username: u.username}
}

func (s *Server) getUser(c *conn, r *request) outcome {
	var req iggy.GetUserRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// As the real server's find_user: an unknown user is an empty answer,
	// and a user may read itself without read_users.
	u := s.userByID(&req.UserID)
	if u == nil {
		return outcome{}
	}
	if u.id != r.sess.userID && !s.accessOf(r.sess).readUsers() {
		return statusOf(iggy.StatusUnauthorized)
	}
	return c.okBody(userDetails(u))
}

func (s *Server) getUsers(c *conn, r *request) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.accessOf(r.sess).readUsers() {
		return statusOf(iggy.StatusUnauthorized)
	}
	var resp iggy.GetUsersResponse
	resp.Users = inKeyOrder(s.users, userResponse)
	return c.okBody(&resp)
}

// createUser serves CREATE_USER. Called with Server.mu held.
func (s *Server) createUser(c *conn, r *request) outcome {
	var req iggy.CreateUserRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	if len(req.Options) > 0 {
		return statusOf(iggy.StatusUnsupportedOptionKey)
	}
	if !s.accessOf(r.sess).manageUsers() {
		return resultErr(iggy.StatusUnauthorized)
	}
	if !validUsername(req.Username) {
		return resultErr(iggy.StatusInvalidUsername)
	}
	if !validPassword(req.Password) {
		return resultErr(iggy.StatusInvalidPassword)
	}
	if _, ok := s.userByName[req.Username]; ok {
		return resultErr(iggy.StatusUserAlreadyExists)
	}
	id, ok := lowestFree(s.users, maxUsers)
	if !ok {
		return resultErr(iggy.StatusUsersLimitReached)
	}
	var perms *iggy.Permissions
	if req.Permissions != nil {
		p := clonePermissions(&req.Permissions.Permissions)
		perms = &p
	}
	u := newUser(id, req.Username, req.Password, req.Status, perms, s.nowMicros())
	s.users[id] = u
	s.userByName[u.username] = id
	r.dirty = true
	return c.okResult(userDetails(u))
}

// updateUser serves UPDATE_USER. Called with Server.mu held.
func (s *Server) updateUser(c *conn, r *request) outcome {
	var req iggy.UpdateUserRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	if len(req.Options) > 0 {
		return statusOf(iggy.StatusUnsupportedOptionKey)
	}
	if !s.accessOf(r.sess).manageUsers() {
		return resultErr(iggy.StatusUnauthorized)
	}
	u := s.userByID(&req.UserID)
	if u == nil {
		return resultErr(iggy.StatusResourceNotFound)
	}
	if req.Username != nil && *req.Username != u.username {
		if !validUsername(*req.Username) {
			return resultErr(iggy.StatusInvalidUsername)
		}
		if _, ok := s.userByName[*req.Username]; ok {
			return resultErr(iggy.StatusUserAlreadyExists)
		}
		delete(s.userByName, u.username)
		u.username = *req.Username
		s.userByName[u.username] = u.id
	}
	if req.Status != nil {
		u.status = *req.Status
	}
	r.dirty = true
	return c.okResult(nil)
}

// managedUser finds the user a request managing users names, for a session
// that may manage users; the root user is refused with rootRefusal. A nil
// user comes with the refusal.
func (s *Server) managedUser(r *request, id *iggy.Identifier, rootRefusal iggy.Status) (*user, outcome) {
	if !s.accessOf(r.sess).manageUsers() {
		return nil, resultErr(iggy.StatusUnauthorized)
	}
	u := s.userByID(id)
	if u == nil {
		return nil, resultErr(iggy.StatusResourceNotFound)
	}
	if u.id == rootUserID {
		return nil, resultErr(rootRefusal)
	}
	return u, outcome{}
}

// updatePermissions serves UPDATE_PERMISSIONS. Called with Server.mu held.
func (s *Server) updatePermissions(c *conn, r *request) outcome {
	var req iggy.UpdatePermissionsRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
	}
	u, refused := s.managedUser(r, &req.UserID, iggy.StatusCannotChangePermissions)
	if u == nil {
		return refused
	}
	u.perms = nil
	if req.Permissions != nil {
		p := clonePermissions(&req.Permissions.Permissions)
		u.perms = &p
	}
	r.dirty = true
	return c.okResult(nil)
}

// changePassword serves CHANGE_PASSWORD. Called with Server.mu held.
func (s *Server) changePassword(c *conn, r *request) outcome {
	var req iggy.ChangePasswordRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	u := s.userByID(&req.UserID)
	if u == nil {
		return resultErr(iggy.StatusResourceNotFound)
	}
	if u.id != r.sess.userID && !s.accessOf(r.sess).manageUsers() {
		return resultErr(iggy.StatusUnauthorized)
	}
	if !u.checkPassword(req.CurrentPassword) {
		return resultErr(iggy.StatusInvalidCredentials)
	}
	if !validPassword(req.NewPassword) {
		return resultErr(iggy.StatusInvalidPassword)
	}
	u.setPassword(req.NewPassword)
	r.dirty = true
	return c.okResult(nil)
}

// deleteUser serves DELETE_USER. Called with Server.mu held.
func (s *Server) deleteUser(c *conn, r *request) outcome {
	var req iggy.DeleteUserRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
	}
	u, refused := s.managedUser(r, &req.UserID, iggy.StatusCannotDeleteUser)
	if u == nil {
		return refused
	}
	delete(s.users, u.id)
	delete(s.userByName, u.username)
	r.dirty = true
	return c.okResult(nil)
}

func (s *Server) getTokens(c *conn, r *request) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[r.sess.userID]
	var resp iggy.GetPersonalAccessTokensResponse
	if u != nil {
		for _, name := range sortedTokenNames(u) {
			resp.Tokens = append(resp.Tokens, iggy.PersonalAccessTokenInfo{Name: name, ExpiryAt: u.tokens[name].expiryAt})
		}
	}
	return c.okBody(&resp)
}

// createToken serves CREATE_PERSONAL_ACCESS_TOKEN. Called with Server.mu
// held.
func (s *Server) createToken(c *conn, r *request) outcome {
	var req iggy.CreatePersonalAccessTokenRequest
	if err := decodeBody(&req, r.body); err != nil {
		return statusOf(iggy.StatusInvalidCommand)
	}
	u := s.users[r.sess.userID]
	if u == nil {
		return resultErr(iggy.StatusResourceNotFound)
	}
	if _, ok := u.tokens[req.Name]; ok {
		return resultErr(iggy.StatusPersonalAccessTokenAlreadyExists)
	}
	if len(u.tokens) >= iggy.LimitMaxPersonalAccessTokensPerUser {
		return resultErr(iggy.StatusPersonalAccessTokensLimitReached)
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	secret := base64.RawURLEncoding.EncodeToString(raw[:])
	var expiryAt uint64 // 0 = never; the server default is never
	if req.Expiry != 0 && req.Expiry != math.MaxUint64 {
		now := s.nowMicros()
		if req.Expiry <= math.MaxUint64-now {
			expiryAt = now + req.Expiry
		}
	}
	u.tokens[req.Name] = &token{name: req.Name, hash: hashToken(secret), expiryAt: expiryAt}
	r.dirty = true
	return c.okResult(&iggy.CreatePersonalAccessTokenResponse{Token: secret})
}

// deleteToken serves DELETE_PERSONAL_ACCESS_TOKEN. Called with Server.mu
// held.
func (s *Server) deleteToken(c *conn, r *request) outcome {
	var req iggy.DeletePersonalAccessTokenRequest
	if err := decodeBody(&req, r.body); err != nil {
		return evictWith(iggy.EvictionReasonInvalidRequestBody)
	}
	u := s.users[r.sess.userID]
	if u == nil || u.tokens[req.Name] == nil {
		return resultErr(iggy.StatusResourceNotFound)
	}
	delete(u.tokens, req.Name)
	r.dirty = true
	return c.okResult(nil)
}

func sortedTokenNames(u *user) []string {
	names := make([]string, 0, len(u.tokens))
	for n := range u.tokens {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// clonePermissions deep-copies p (decoded values alias the request frame).
func clonePermissions(p *iggy.Permissions) iggy.Permissions {
	out := iggy.Permissions{Global: p.Global}
	for _, sp := range p.Streams {
		c := sp
		c.Topics = append([]iggy.TopicPermissions(nil), sp.Topics...)
		out.Streams = append(out.Streams, c)
	}
	return out
}
