"""LTI 1.3 (issue 30): LMS courses and resource links mapped to ours, scores sent, one-use
launch states and nonces.

Revision ID: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lti_contexts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("issuer", sa.String(300), nullable=False),
        sa.Column("deployment_id", sa.String(300), nullable=False),
        sa.Column("context_id", sa.String(300), nullable=False),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"),
                  nullable=False),
        sa.UniqueConstraint("issuer", "deployment_id", "context_id"))
    op.create_table(
        "lti_resources",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("issuer", sa.String(300), nullable=False),
        sa.Column("deployment_id", sa.String(300), nullable=False),
        sa.Column("resource_link_id", sa.String(300), nullable=False),
        sa.Column("assignment_id", sa.Integer,
                  sa.ForeignKey("assignments.id", ondelete="CASCADE"), nullable=False),
        sa.Column("lineitem_url", sa.String(1000), nullable=True),
        sa.UniqueConstraint("issuer", "deployment_id", "resource_link_id"))
    op.create_table(
        "lti_scores_sent",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("resource_id", sa.Integer,
                  sa.ForeignKey("lti_resources.id", ondelete="CASCADE"), nullable=False),
        sa.Column("account_id", sa.Integer, sa.ForeignKey("accounts.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("score_percent", sa.Float, nullable=False),
        sa.Column("sent_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("resource_id", "account_id"))
    op.create_table(
        "lti_nonces",
        sa.Column("value_hash", sa.String(64), primary_key=True),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("issuer", sa.String(300), nullable=False),
        sa.Column("nonce", sa.String(200), nullable=True),
        sa.Column("expires_at", sa.DateTime, nullable=False))


def downgrade() -> None:
    for table in ("lti_nonces", "lti_scores_sent", "lti_resources", "lti_contexts"):
        op.drop_table(table)
