-- The ledger's tables as faceoff created them before migrations
-- (SQLModel.metadata.create_all): the DDL SQLAlchemy emitted for postgresql, frozen.
-- Ledgers in the field hold this schema; never edit it.

CREATE TABLE campaign (
	id SERIAL NOT NULL,
	name VARCHAR NOT NULL,
	matrix_id VARCHAR NOT NULL,
	status VARCHAR NOT NULL,
	evidence_dir VARCHAR NOT NULL,
	created_at TIMESTAMP WITH TIME ZONE NOT NULL,
	updated_at TIMESTAMP WITH TIME ZONE NOT NULL,
	closed_at TIMESTAMP WITH TIME ZONE,
	accepted INTEGER NOT NULL,
	failed INTEGER NOT NULL,
	blocked INTEGER NOT NULL,
	pending INTEGER NOT NULL,
	PRIMARY KEY (id)
);

CREATE UNIQUE INDEX ix_campaign_name ON campaign (name);

CREATE TABLE ledger_meta (
	key VARCHAR NOT NULL,
	value VARCHAR NOT NULL,
	PRIMARY KEY (key)
);

CREATE TABLE cell_run (
	id SERIAL NOT NULL,
	campaign_id INTEGER NOT NULL,
	cell_id VARCHAR NOT NULL,
	arm VARCHAR NOT NULL,
	attempt INTEGER NOT NULL,
	disposition VARCHAR NOT NULL,
	reason_code VARCHAR,
	reason VARCHAR,
	interrupted BOOLEAN NOT NULL,
	started_at TIMESTAMP WITH TIME ZONE,
	ended_at TIMESTAMP WITH TIME ZONE,
	artifacts_dir VARCHAR,
	verdict_sha256 VARCHAR,
	PRIMARY KEY (id),
	UNIQUE (campaign_id, cell_id, arm, attempt),
	FOREIGN KEY(campaign_id) REFERENCES campaign (id)
);

CREATE INDEX ix_cell_run_campaign_id ON cell_run (campaign_id);

CREATE TABLE lane_run (
	id SERIAL NOT NULL,
	campaign_id INTEGER NOT NULL,
	arm VARCHAR NOT NULL,
	purpose VARCHAR NOT NULL,
	lane_kind VARCHAR NOT NULL,
	image_digest VARCHAR,
	container_id VARCHAR,
	pid INTEGER,
	started_at TIMESTAMP WITH TIME ZONE NOT NULL,
	stopped_at TIMESTAMP WITH TIME ZONE,
	identity_ok BOOLEAN,
	identity_reason VARCHAR,
	record_path VARCHAR,
	PRIMARY KEY (id),
	FOREIGN KEY(campaign_id) REFERENCES campaign (id)
);

CREATE INDEX ix_lane_run_campaign_id ON lane_run (campaign_id);

CREATE TABLE restoration (
	id SERIAL NOT NULL,
	campaign_id INTEGER NOT NULL,
	incumbent_arm VARCHAR NOT NULL,
	image_digest VARCHAR,
	state VARCHAR NOT NULL,
	reason VARCHAR,
	required_at TIMESTAMP WITH TIME ZONE NOT NULL,
	completed_at TIMESTAMP WITH TIME ZONE,
	attempts INTEGER NOT NULL,
	receipt_path VARCHAR,
	receipt_sha256 VARCHAR,
	PRIMARY KEY (id),
	FOREIGN KEY(campaign_id) REFERENCES campaign (id)
);

CREATE UNIQUE INDEX ix_restoration_campaign_id ON restoration (campaign_id);

CREATE TABLE review (
	id SERIAL NOT NULL,
	campaign_id INTEGER NOT NULL,
	reviewer VARCHAR NOT NULL,
	decision VARCHAR NOT NULL,
	note VARCHAR NOT NULL,
	cells VARCHAR,
	forced_reason VARCHAR,
	created_at TIMESTAMP WITH TIME ZONE NOT NULL,
	record_sha256 VARCHAR NOT NULL,
	PRIMARY KEY (id),
	FOREIGN KEY(campaign_id) REFERENCES campaign (id)
);

CREATE INDEX ix_review_campaign_id ON review (campaign_id);

CREATE TABLE request_record (
	id SERIAL NOT NULL,
	cell_run_id INTEGER NOT NULL,
	request_index INTEGER NOT NULL,
	phase VARCHAR NOT NULL,
	status VARCHAR NOT NULL,
	journal_line INTEGER NOT NULL,
	prompt_tokens INTEGER,
	completion_tokens INTEGER,
	ttft_s FLOAT,
	e2e_s FLOAT,
	PRIMARY KEY (id),
	FOREIGN KEY(cell_run_id) REFERENCES cell_run (id)
);

CREATE INDEX ix_request_record_cell_run_id ON request_record (cell_run_id);
