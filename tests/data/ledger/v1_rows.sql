-- Rows of a ledger from before migrations: two campaigns, one closed and reviewed with its
-- restoration receipt, one interrupted; plain SQL that SQLite and PostgreSQL both take.
-- Ids come from the tables themselves (1, 2, … in this order), as they did in a real ledger.
INSERT INTO ledger_meta (key, value) VALUES ('schema_version', '1');
INSERT INTO campaign (name, matrix_id, status, evidence_dir, created_at, updated_at, closed_at, accepted, failed, blocked, pending)
VALUES ('glm53-exl3-vs-nvfp4-20261016', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'complete', '/var/lib/faceoff/runs/glm53-exl3-vs-nvfp4-20261016', '2026-10-15 23:30:02.125000', '2026-10-16 04:11:40.500000', '2026-10-16 04:11:40.500000', 3, 1, 0, 0);
INSERT INTO campaign (name, matrix_id, status, evidence_dir, created_at, updated_at, closed_at, accepted, failed, blocked, pending)
VALUES ('glm53-exl3-vs-nvfp4-20261017', 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 'running', '/var/lib/faceoff/runs/glm53-exl3-vs-nvfp4-20261017', '2026-10-16 23:30:01.000000', '2026-10-17 00:02:13.000000', NULL, 0, 0, 0, 1);
INSERT INTO lane_run (campaign_id, arm, purpose, lane_kind, image_digest, container_id, pid, started_at, stopped_at, identity_ok, identity_reason, record_path)
VALUES (1, 'exl3-r11', 'campaign', 'docker', 'sha256:1111111111111111111111111111111111111111111111111111111111111111', 'c0ffee', NULL, '2026-10-15 23:31:00.000000', '2026-10-16 01:40:00.000000', true, NULL, '/var/lib/faceoff/runs/glm53-exl3-vs-nvfp4-20261016/lanes/exl3-r11-1/lane.json');
INSERT INTO lane_run (campaign_id, arm, purpose, lane_kind, image_digest, container_id, pid, started_at, stopped_at, identity_ok, identity_reason, record_path)
VALUES (1, 'exl3-r11', 'restore', 'docker', 'sha256:1111111111111111111111111111111111111111111111111111111111111111', 'decade', NULL, '2026-10-16 04:05:00.000000', NULL, true, NULL, NULL);
INSERT INTO cell_run (campaign_id, cell_id, arm, attempt, disposition, reason_code, reason, interrupted, started_at, ended_at, artifacts_dir, verdict_sha256)
VALUES (1, 'natural-1024-c1', 'exl3-r11', 1, 'accepted', NULL, NULL, false, '2026-10-15 23:35:00.000000', '2026-10-15 23:50:00.000000', 'cells/natural-1024-c1/exl3-r11/1', 'cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc');
INSERT INTO cell_run (campaign_id, cell_id, arm, attempt, disposition, reason_code, reason, interrupted, started_at, ended_at, artifacts_dir, verdict_sha256)
VALUES (1, 'natural-1024-c1', 'nvfp4-r2', 1, 'failed', 'error_rate', 'error rate 4.0% above the 1.0% limit', false, '2026-10-16 01:45:00.000000', '2026-10-16 02:00:00.000000', 'cells/natural-1024-c1/nvfp4-r2/1', 'dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd');
INSERT INTO cell_run (campaign_id, cell_id, arm, attempt, disposition, reason_code, reason, interrupted, started_at, ended_at, artifacts_dir, verdict_sha256)
VALUES (2, 'natural-1024-c1', 'exl3-r11', 1, 'pending', NULL, 'the run that started this attempt ended before its disposition', true, '2026-10-16 23:35:00.000000', '2026-10-17 00:02:13.000000', 'cells/natural-1024-c1/exl3-r11/1', NULL);
INSERT INTO request_record (cell_run_id, request_index, phase, status, journal_line, prompt_tokens, completion_tokens, ttft_s, e2e_s)
VALUES (1, 0, 'warmup', 'ok', 1, 1024, 128, 0.25, 2.5);
INSERT INTO request_record (cell_run_id, request_index, phase, status, journal_line, prompt_tokens, completion_tokens, ttft_s, e2e_s)
VALUES (1, 1, 'scored', 'ok', 2, 1024, 128, 0.125, 2.0);
INSERT INTO request_record (cell_run_id, request_index, phase, status, journal_line, prompt_tokens, completion_tokens, ttft_s, e2e_s)
VALUES (2, 1, 'scored', 'error', 2, 1024, NULL, NULL, NULL);
INSERT INTO restoration (campaign_id, incumbent_arm, image_digest, state, reason, required_at, completed_at, attempts, receipt_path, receipt_sha256)
VALUES (1, 'exl3-r11', 'sha256:1111111111111111111111111111111111111111111111111111111111111111', 'restored', NULL, '2026-10-15 23:31:00.000000', '2026-10-16 04:06:00.000000', 1, '/var/lib/faceoff/runs/glm53-exl3-vs-nvfp4-20261016/restore_receipt.json', 'eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee');
INSERT INTO restoration (campaign_id, incumbent_arm, image_digest, state, reason, required_at, completed_at, attempts, receipt_path, receipt_sha256)
VALUES (2, 'exl3-r11', 'sha256:1111111111111111111111111111111111111111111111111111111111111111', 'required', NULL, '2026-10-16 23:31:00.000000', NULL, 0, NULL, NULL);
INSERT INTO review (campaign_id, reviewer, decision, note, cells, forced_reason, created_at, record_sha256)
VALUES (1, 'mira', 'no_promotion', 'nvfp4-r2 failed its error rate at C1', NULL, NULL, '2026-10-16 09:00:00.000000', 'ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff');
