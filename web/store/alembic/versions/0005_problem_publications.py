"""Drafts (issue 30 item 3): the problems an instructor published while still drafts.

Revision ID: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "problem_publications",
        sa.Column("problem_id", sa.String(32), primary_key=True),
        sa.Column("published_by", sa.String(64), nullable=False),
        sa.Column("published_at", sa.DateTime, nullable=False))


def downgrade() -> None:
    op.drop_table("problem_publications")
