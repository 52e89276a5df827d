"""Course roles stay in their course (issue 28 item 1): an existing account is invited to a
course and joins only when it accepts; a regrade may belong to one course, so a course's
"Regrade all" covers its own students and holds its own pending slot, not the platform's.

Revision ID: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "course_invitations",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("account_id", sa.Integer, sa.ForeignKey("accounts.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("course_id", "account_id"))
    op.create_index("ix_course_invitations_account_id", "course_invitations", ["account_id"])
    # None: the platform's own regrade (every visitor's latest submission), as before. A new
    # database has it already: the baseline (0001) makes the legacy tables from today's models;
    # one stamped from before Alembic may have no regrades table yet (made after the upgrade).
    insp = sa.inspect(op.get_bind())
    if not insp.has_table("regrades"):
        return
    if "course_id" not in {c["name"] for c in insp.get_columns("regrades")}:
        op.add_column("regrades", sa.Column("course_id", sa.Integer, nullable=True))
    if "ix_regrades_course_id" not in {i["name"] for i in insp.get_indexes("regrades")}:
        op.create_index("ix_regrades_course_id", "regrades", ["course_id"])


def downgrade() -> None:
    op.drop_index("ix_regrades_course_id", "regrades")
    op.drop_column("regrades", "course_id")
    op.drop_table("course_invitations")
