"""A password someone else reset must be changed by its account (issue 30 item 6).

Revision ID: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("accounts", sa.Column("must_change_password", sa.Boolean, nullable=False,
                                        server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("accounts", "must_change_password")
