package records

import (
	"context"
	"encoding/json"

	"github.com/redis/go-redis/v9"

	"github.com/codeinterp/codeinterp/jobs"
)

// SetWebhook records the delivery state of an execution's webhook, leaving the rest
// of the record as it is.
func (s *Store) SetWebhook(ctx context.Context, id string, st jobs.WebhookState) error {
	key := s.recordKey(id)
	return s.rdb.Watch(ctx, func(tx *redis.Tx) error {
		data, err := tx.HGet(ctx, key, "json").Bytes()
		if err != nil {
			return err
		}
		var ex jobs.Execution
		if err := json.Unmarshal(data, &ex); err != nil {
			return err
		}
		ex.Webhook = &st
		out, err := json.Marshal(&ex)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "json", out)
			return nil
		})
		return err
	}, key)
}
