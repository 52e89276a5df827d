"""Accounts, server-side sessions, courses with roles, rosters and assignments (issue 21).

Revision ID: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    _accounts()
    _courses()


def _accounts() -> None:
    """Who signs in: accounts and their sessions."""
    op.create_table(
        "accounts",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("username", sa.String(64), nullable=False),
        sa.Column("display_name", sa.String(64), nullable=False),
        sa.Column("password_hash", sa.String(200), nullable=True),
        sa.Column("is_staff", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("visitor_id", sa.Integer, sa.ForeignKey("visitors.id"), nullable=False,
                  unique=True),
        sa.Column("oidc_subject", sa.String(400), nullable=True, unique=True),
        sa.Column("created_at", sa.DateTime, nullable=False))
    op.create_index("ix_accounts_username", "accounts", ["username"], unique=True)
    op.create_table(
        "auth_sessions",
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("account_id", sa.Integer, sa.ForeignKey("accounts.id", ondelete="CASCADE"),
                  nullable=True),
        sa.Column("is_staff", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("expires_at", sa.DateTime, nullable=False))
    op.create_index("ix_auth_sessions_account_id", "auth_sessions", ["account_id"])


def _courses() -> None:
    """A course, who is in it (members, the roster) and what it assigns."""
    op.create_table(
        "courses",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("join_code", sa.String(32), nullable=False),
        sa.Column("created_at", sa.DateTime, nullable=False))
    op.create_index("ix_courses_join_code", "courses", ["join_code"], unique=True)
    op.create_table(
        "memberships",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("account_id", sa.Integer, sa.ForeignKey("accounts.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.UniqueConstraint("course_id", "account_id"))
    op.create_index("ix_memberships_course_id", "memberships", ["course_id"])
    op.create_index("ix_memberships_account_id", "memberships", ["account_id"])
    op.create_table(
        "roster_entries",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("student_id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.UniqueConstraint("course_id", "student_id"))
    op.create_index("ix_roster_entries_course_id", "roster_entries", ["course_id"])
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("course_id", sa.Integer, sa.ForeignKey("courses.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("problems", sa.Text, nullable=False),
        sa.Column("opens_at", sa.DateTime, nullable=False),
        sa.Column("deadline", sa.DateTime, nullable=False),
        sa.Column("late_until", sa.DateTime, nullable=True),
        sa.Column("late_penalty", sa.Float, nullable=False, server_default="0"),
        sa.Column("rule", sa.String(8), nullable=False, server_default="best"),
        sa.Column("created_at", sa.DateTime, nullable=False))
    op.create_index("ix_assignments_course_id", "assignments", ["course_id"])


def downgrade() -> None:
    for table in ("assignments", "roster_entries", "memberships", "courses", "auth_sessions",
                  "accounts"):
        op.drop_table(table)
